"""The buffered OS source (`dpsql.mechanisms.rng.SystemRandomSource`): exactness, fork and thread
safety, bytes served once, nothing carried by pickling or copying.

Statistical checks here draw fresh OS randomness, so they cannot be seeded: each positive check
rejects a correct source with probability ALPHA = 1e-6 (the chi-square p-value is uniform under
H0), so the 5 positive checks below fail together with probability below 5e-6 per run. Every
negative control feeds the same check the output of a deliberately biased source (modulo
reduction or clamping instead of rejection) built on seeded bits, so it is deterministic, and
asserts that the check rejects it at the same ALPHA.
"""

from __future__ import annotations

import ast
import copy
import inspect
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from random import Random

import pytest
from scipy import stats

from dpsql.mechanisms import rng as rng_module
from dpsql.mechanisms.rng import SystemRandomSource

ALPHA = 1e-6


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture
def fresh_pool() -> Iterator[None]:
    """Start and end with an empty buffer, so no test sees bytes another test put there."""
    rng_module._POOL.discard()
    yield
    rng_module._POOL.discard()


class ModuloSource:
    """Biased on purpose: k = (n - 1).bit_length() seeded bits reduced modulo n, no rejection."""

    def __init__(self, seed: int) -> None:
        self._gen = Random(seed)

    def randbelow(self, n: int) -> int:
        k = (n - 1).bit_length()
        return self._gen.getrandbits(k) % n if k else 0


class ClampSource:
    """Biased on purpose: k seeded bits clamped to n - 1 instead of rejected."""

    def __init__(self, seed: int) -> None:
        self._gen = Random(seed)

    def randbelow(self, n: int) -> int:
        k = (n - 1).bit_length()
        return min(self._gen.getrandbits(k), n - 1) if k else 0


def bucket_probabilities(n: int, buckets: int) -> list[float]:
    """Exact P(bucket b) for a uniform value x in [0, n) put in bucket floor(x * buckets / n).

    The count of x with floor(x * B / n) = b is ceil((b + 1) n / B) - ceil(b n / B), in integers.
    """

    def ceil_div(a: int, b: int) -> int:
        return -(-a // b)

    return [(ceil_div((b + 1) * n, buckets) - ceil_div(b * n, buckets)) / n for b in range(buckets)]


def uniform_pvalue(draw: Callable[[int], int], n: int, samples: int, buckets: int | None = None) -> float:
    """Chi-square p-value of `samples` draws of draw(n) against the uniform law on [0, n).

    One bin per value when `buckets` is None, else `buckets` contiguous buckets with their exact
    probabilities. Every value must be in range (an out-of-range value fails at once).
    """
    bins = n if buckets is None else buckets
    observed = [0] * bins
    for _ in range(samples):
        x = draw(n)
        assert 0 <= x < n
        observed[x if buckets is None else x * buckets // n] += 1
    probs = [1 / n] * n if buckets is None else bucket_probabilities(n, buckets)
    expected = [samples * p for p in probs]
    assert min(expected) >= 5, "each expected count must be >= 5 for the chi-square approximation"
    total = sum(expected)
    expected = [e * samples / total for e in expected]
    return float(stats.chisquare(observed, expected).pvalue)


# (n, samples, buckets): small bounds with one bin per value; 17 and 2**20 + 1 sit just above a
# power of two (about half of all candidates are rejected); 3 * 2**18 is bucketed, and there
# modulo reduction doubles the weight of its lowest third.
CASES = [
    (3, 30_000, None),
    (10, 30_000, None),
    (17, 34_000, None),
    (3 * 2**18, 64_000, 64),
    (2**20 + 1, 64_000, 64),
]


# --- exactness --------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "samples", "buckets"), CASES, ids=lambda v: str(v))
def test_randbelow_is_uniform(fresh_pool: None, n: int, samples: int, buckets: int | None) -> None:
    pvalue = uniform_pvalue(SystemRandomSource().randbelow, n, samples, buckets)
    assert pvalue > ALPHA, f"H0 (uniform on [0, {n})) rejected: p = {pvalue:.3g}"


@pytest.mark.parametrize(("n", "samples", "buckets"), CASES, ids=lambda v: str(v))
def test_negative_control_the_same_check_rejects_a_biased_source(n: int, samples: int, buckets: int | None) -> None:
    # Modulo reduction only moves the weight of the top 2**k - 2n values when n is just above a
    # power of two: at 2**20 + 1 that is 2 values out of a million, invisible in 64 buckets, so
    # that case gets the other classic shortcut, clamping, which piles half the mass on n - 1.
    biased = ClampSource(n) if n == 2**20 + 1 else ModuloSource(n)
    pvalue = uniform_pvalue(biased.randbelow, n, samples, buckets)
    assert pvalue < ALPHA, f"a biased source passed at n = {n}: p = {pvalue:.3g}"


def feed(monkeypatch: pytest.MonkeyPatch, chunks: Sequence[bytes]) -> list[int]:
    """Make os.urandom return `chunks` in turn (each call one chunk); returns the sizes asked."""
    asked: list[int] = []
    queue = list(chunks)

    def fake(size: int) -> bytes:
        asked.append(size)
        return queue.pop(0)

    monkeypatch.setattr(rng_module.os, "urandom", fake)
    return asked


def test_rejection_not_modulo(fresh_pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # n = 5 takes k = 3 bits, the top bits of each byte. 0b110 = 6 is >= 5, so it must be
    # rejected and the next byte's 0b011 = 3 served; modulo reduction would have served 6 % 5 = 1.
    feed(monkeypatch, [bytes([0b110_00000, 0b011_11111]) + bytes(100)])
    assert SystemRandomSource().randbelow(5) == 3


def test_each_byte_is_served_once_across_refills(fresh_pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of distinct 8-byte words; randbelow(2**64) takes exactly one word per draw, so the
    # draws must be the words in order, none repeated or skipped, across the block boundary.
    block = rng_module._BLOCK
    words_per_block = block // 8
    blocks = [b"".join((b * words_per_block + i).to_bytes(8, "big") for i in range(words_per_block)) for b in range(3)]
    asked = feed(monkeypatch, blocks)
    source = SystemRandomSource()
    draws = [source.randbelow(2**64) for _ in range(2 * words_per_block + 5)]
    assert draws == list(range(2 * words_per_block + 5))
    assert asked == [block, block, block]


def test_bounds_wider_than_a_block_are_exact(fresh_pool: None) -> None:
    n = 2 ** (8 * rng_module._BLOCK + 100) + 1  # needs more bytes than one block holds
    source = SystemRandomSource()
    draws = [source.randbelow(n) for _ in range(4)]
    assert all(0 <= x < n for x in draws)
    assert len(set(draws)) == 4


def test_bound_one_draws_nothing(fresh_pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = feed(monkeypatch, [])
    assert [SystemRandomSource().randbelow(1) for _ in range(10)] == [0] * 10
    assert asked == []


# --- fork safety ------------------------------------------------------------------------------


def _draw64(count: int = 64) -> list[int]:
    source = SystemRandomSource()
    return [source.randbelow(2**32) for _ in range(count)]


def _in_child(prepare: Callable[[], None]) -> list[int]:
    """Fork; the child runs `prepare`, draws 64 values and sends them back; return them."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            os.close(read_end)
            prepare()
            os.write(write_end, b"".join(x.to_bytes(4, "big") for x in _draw64()))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 4096):
        data += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(data) == 64 * 4
    return [int.from_bytes(data[i : i + 4], "big") for i in range(0, len(data), 4)]


fork_only = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs os.fork (POSIX)")


@fork_only
def test_a_forked_child_never_reuses_the_parents_buffer(fresh_pool: None) -> None:
    _draw64(1)  # the parent fills its buffer: 4 KiB minus 4 bytes are left unserved
    pool = rng_module._POOL
    assert len(pool.buf) - pool.pos > 64 * 4
    child = _in_child(lambda: None)
    parent = _draw64()
    # Equal lists would mean the child served the parent's next 256 bytes. Two independent
    # 64 x 32-bit lists are equal with probability 2**-2048.
    assert child != parent


@fork_only
def test_the_pid_check_alone_protects_a_child(fresh_pool: None) -> None:
    # Simulate a fork that bypassed os.register_at_fork: the child puts the inherited buffer,
    # position and pid back as they were in the parent. The pid check must still discard them.
    _draw64(1)
    pool = rng_module._POOL
    inherited = (pool.buf, pool.pos, pool.pid)

    def undo_the_fork_handler() -> None:
        pool.buf, pool.pos, pool.pid = inherited

    child = _in_child(undo_the_fork_handler)
    assert child != _draw64()


@fork_only
def test_negative_control_without_both_guards_the_child_repeats_the_parent(fresh_pool: None) -> None:
    # Both guards defeated (inherited buffer restored and the pid made to match): the child then
    # serves exactly the parent's next bytes, so the comparison above does detect reuse.
    _draw64(1)
    pool = rng_module._POOL
    buf, pos = pool.buf, pool.pos

    def defeat_both_guards() -> None:
        pool.buf, pool.pos, pool.pid = buf, pos, os.getpid()

    child = _in_child(defeat_both_guards)
    assert child == _draw64()


# --- thread safety ----------------------------------------------------------------------------


def test_concurrent_threads_get_distinct_draws(fresh_pool: None) -> None:
    # 8 threads x 5,000 draws of randbelow(2**64), released together by a barrier and switching
    # as often as the interpreter allows. Among m = 40,000 independent uniform 64-bit values a
    # true collision has probability below m**2 / 2**65 < 5e-11, so any duplicate means two
    # threads were served the same bytes. At 8 bytes a draw a 4 KiB block serves 512 draws, so
    # about 78 refills happen while other threads draw. Races are not deterministic: with the
    # lock removed this test failed in 4 of 5 runs, so it is a detector, not a proof; the proof
    # is that the read-and-advance of the position happens inside the lock.
    threads, per_thread = 8, 5_000
    barrier = threading.Barrier(threads)
    results: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    source = SystemRandomSource()

    def work(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = [source.randbelow(2**64) for _ in range(per_thread)]
        except BaseException as exc:  # noqa: BLE001  # reported by the assertion below
            errors.append(exc)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert errors == []
    values = [x for chunk in results for x in chunk]
    assert len(values) == threads * per_thread
    assert all(0 <= x < 2**64 for x in values)
    assert len(set(values)) == len(values)


# --- pickling and copying -----------------------------------------------------------------------


def test_pickling_or_copying_a_source_carries_no_bytes(fresh_pool: None) -> None:
    source = SystemRandomSource()
    source.randbelow(2)  # the buffer now holds about 4 KiB
    payload = pickle.dumps(source)
    assert len(payload) < 200
    assert rng_module._POOL.buf[rng_module._POOL.pos :][:16] not in payload
    for clone in (pickle.loads(payload), copy.copy(source), copy.deepcopy(source)):
        assert isinstance(clone, SystemRandomSource)
        assert 0 <= clone.randbelow(10) < 10


def test_the_pool_itself_cannot_be_pickled_or_copied() -> None:
    pool = rng_module._POOL
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        pickle.dumps(pool)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.copy(pool)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.deepcopy(pool)


def test_the_privacy_path_never_uses_pseudo_random_generators() -> None:
    # The samplers import neither `random` nor numpy; in rng.py only the test-only
    # SeededRandomSource uses random.Random, never the OS source or its pool.
    from dpsql.mechanisms import sampling

    tree = ast.parse(inspect.getsource(sampling))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] in {"random", "numpy"}}
    for cls in (SystemRandomSource, rng_module._UrandomPool):
        text = inspect.getsource(cls)
        assert "Random" not in text.replace("SystemRandomSource", "")
        assert "random." not in text
        assert "numpy" not in text
