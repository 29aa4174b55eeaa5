"""Neighbouring pairs for the auditor: D' and D = D' plus one adversarial person.

`people` (a private table, max_rows 3, max_groups 2), `visits` (private, on the same unit) and
`depts` (public). The added person is chosen to make every mechanism's worst case visible:

- more rows than max_rows (5 people rows, 5 visits rows), all identical, so whichever 3 rows the
  secret-seeded bounding keeps, the person moves every count by exactly max_rows;
- extreme values beyond the bounds (income 1e7 against an upper bound of 500,000; age 90 at the
  bound; minutes 60 at the bound; the last hired date), so sums, averages and variances move by
  their full sensitivity after clamping, and the largest order statistics move;
- a rare key (region 'atlantis', held by nobody else), so partition selection decides alone
  whether that key appears;
- the join fan-out (dept 'hr' matches three `depts` rows: 3 x 3 = 9 joined rows; 3 x 3 = 9
  rows in `people JOIN visits`);
- near-ties (dept 'engineering' and 'hr' have equal row counts in D', as have teams 'red' and
  'blue'), so MODE's winner depends on the person's rows;
- Propose-Test-Release at its threshold tau (a public number: PTRTest(1, 1e-6).threshold): the
  `score` column puts the median inside a block of ties whose upper end lies 2 tau ranks above
  it in D' (SMed's distance is tau in D' and tau - 1 in D, the person's rows lying above), and
  the `badge` column gives the winning value a lead of exactly 2 tau persons in D' (A_samp's
  distance is tau - 1 in D' and tau in D, the person voting for the winner). So the test's
  noise alone decides, and the correct test's worst case is attained.

The other persons (1-3 rows each, never more than max_rows) are synthetic data from a seeded NumPy
generator: data, not privacy noise.
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from functools import cache

import numpy as np
import pandas as pd

from dpsql.mechanisms.ptr import PTRTest
from tests.audit.auditor import Neighbours

TARGET = 10**6
PERSONS = 300
TAU = PTRTest(Fraction(1), Fraction(1, 10**6)).threshold  # the PTR threshold at epsilon 1, delta 1e-6

POLICY = """
[budget]
epsilon = 1e9
delta = 0.5
accountant = "basic"
default_query_epsilon = 1
default_query_delta = 1e-6

[tables.people]
privacy_unit = "person_id"
max_rows = 3
max_groups = 2

[tables.people.columns]
person_id = { type = "int" }
age = { type = "int", lower = 18, upper = 90 }
income = { type = "float", lower = 0, upper = 500000 }
dept = { type = "text", values = ["engineering", "hr", "operations", "sales"] }
grade = { type = "text", values = ["junior", "senior"] }
region = { type = "text" }
team = { type = "text" }
badge = { type = "text" }
score = { type = "int", lower = 0, upper = 100 }
hired = { type = "date", lower = 2000-01-01, upper = 2025-12-31 }

[tables.visits]
privacy_unit = "person_id"
max_rows = 3

[tables.visits.columns]
person_id = { type = "int" }
minutes = { type = "int", lower = 0, upper = 60 }

[tables.depts]
public = true

[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }
"""


def _people(rng: np.random.Generator) -> pd.DataFrame:
    rows = rng.integers(1, 4, PERSONS)
    ids = np.repeat(np.arange(1, PERSONS + 1), rows)
    n = ids.size
    # Exact department counts with a tie at the top (engineering = hr), in random order.
    top = (n - 150) // 2
    depts = np.array(["engineering"] * top + ["hr"] * top + ["operations"] * 100 + ["sales"] * (n - 2 * top - 100))
    rng.shuffle(depts)
    person_team = np.array(["red", "blue", "red", "blue", "green"])[np.arange(PERSONS) % 5]  # red and blue lead
    person_region = rng.choice(["north", "south", "east", "west"], PERSONS)
    start = dt.date(2000, 1, 1).toordinal()
    hired = [dt.date.fromordinal(start + int(d)) for d in rng.integers(0, 9000, PERSONS)]
    frame = pd.DataFrame({
        "person_id": ids,
        "age": np.repeat(rng.integers(18, 90, PERSONS), rows),
        "income": np.round(np.clip(np.exp(rng.normal(10.5, 0.7, n)), 0, 400000), 2),
        "dept": depts,
        "region": np.repeat(person_region, rows),
        "team": np.repeat(person_team, rows),
        "grade": np.repeat(rng.choice(["junior", "senior"], PERSONS), rows),
        "hired": pd.to_datetime(np.repeat(np.array(hired, dtype="datetime64[D]"), rows)).date,
    })
    # A_samp: persons vote for their badge; gold leads silver by exactly 2 tau persons.
    gold = 120
    badges = np.array(["gold"] * gold + ["silver"] * (gold - 2 * TAU) + ["bronze"] * (PERSONS - 2 * gold + 2 * TAU))
    assert (badges == "bronze").sum() < (badges == "silver").sum()
    rng.shuffle(badges)
    frame["badge"] = np.repeat(badges, rows)
    frame["score"] = _scores(n, rng)
    return frame


def _scores(n: int, rng: np.random.Generator) -> np.ndarray:
    """Values with a tie block (50) around the median: SMed's upper distance is exactly tau in D'.

    With m = ceil(n / 2) and c_le = #{x <= 50}, SMed's distance is
    min(ceil((m - c_lt) / 2) - 1, floor((c_le - m) / 2)) (shift s = ceil(3 / 2) = 2); c_le - m =
    2 tau makes it tau, and the lower side is kept well above. D adds three rows at 100: m grows
    by 1 or 2 and the distance drops to tau - 1.
    """
    m = (n + 1) // 2
    c_le = m + 2 * TAU
    c_lt = m - 2 * TAU - 12
    values = np.concatenate([rng.integers(0, 50, c_lt), np.full(c_le - c_lt, 50), rng.integers(51, 100, n - c_le)])
    rng.shuffle(values)
    return values


def _visits(rng: np.random.Generator) -> pd.DataFrame:
    rows = rng.integers(0, 4, PERSONS)
    ids = np.repeat(np.arange(1, PERSONS + 1), rows)
    return pd.DataFrame({"person_id": ids, "minutes": rng.integers(0, 61, ids.size)})


DEPTS = pd.DataFrame({"name": ["engineering", "hr", "hr", "hr", "operations", "sales"], "floor": [1, 3, 4, 5, 2, 6]})


def _person() -> tuple[pd.DataFrame, pd.DataFrame]:
    people = pd.DataFrame({"person_id": [TARGET] * 5, "age": [90] * 5, "income": [1e7] * 5, "dept": ["hr"] * 5,
                           "region": ["atlantis"] * 5, "team": ["red"] * 5, "grade": ["senior"] * 5, "hired": [dt.date(2025, 12, 31)] * 5,
                           "badge": ["gold"] * 5, "score": [100] * 5})
    visits = pd.DataFrame({"person_id": [TARGET] * 5, "minutes": [60] * 5})
    return people, visits


@cache
def people_pair() -> Neighbours:
    """The pair most templates run on (module doc)."""
    rng = np.random.default_rng(20260525)
    people, visits = _people(rng), _visits(rng)
    # Red and blue tie in rows (MODE counts rows): the surplus rows of the larger go to green.
    red, blue = (people["team"] == "red").sum(), (people["team"] == "blue").sum()
    larger = "red" if red > blue else "blue"
    people.loc[people.index[people["team"] == larger][: abs(red - blue)], "team"] = "green"
    extra_people, extra_visits = _person()
    d2 = {"people": people, "visits": visits, "depts": DEPTS}
    d = {"people": pd.concat([people, extra_people.astype(people.dtypes.to_dict())], ignore_index=True),
         "visits": pd.concat([visits, extra_visits.astype(visits.dtypes.to_dict())], ignore_index=True), "depts": DEPTS}
    return Neighbours("people", POLICY, d, d2)


MM_SECTION = """
[tables.people.median_mechanism]
columns = ["dept", "age"]
epsilon = 2
accuracy = 150
mode = "pure"
strategy = "pmw"
min_hard_slots = 1
after_halt = "renew"
"""


@cache
def mm_pair() -> Neighbours:
    """The people pair with ages tied to departments (engineering young, hr old) and a Median
    Mechanism layer on `people` (dept x age: 370 cells; pmw warm-started from noisy 1-way
    marginals, 2 hard answers per reservation, then a renewal). The marginals' independent model
    is far from the joint counts, so the layer's sparse vector finds hard queries: the hard answers
    (the person's cell moves them by 3) and the easy/hard pattern are what the analyst sees."""
    pair = people_pair()
    rng = np.random.default_rng(20260526)
    ranges = {"engineering": (18, 36), "hr": (60, 90), "operations": (36, 60), "sales": (18, 90)}

    def tied(people: pd.DataFrame) -> pd.DataFrame:
        people = people.copy()
        for dept, (low, high) in ranges.items():
            rows = (people["dept"] == dept) & (people["person_id"] != TARGET)
            people.loc[rows, "age"] = rng.integers(low, high, int(rows.sum()))
        return people

    d2_people = tied(pair.d2["people"])
    d_people = pd.concat([d2_people, pair.d["people"][pair.d["people"]["person_id"] == TARGET]], ignore_index=True)
    return Neighbours("mm", POLICY + MM_SECTION, {**pair.d, "people": d_people}, {**pair.d2, "people": d2_people})


PAIRS = {"people": people_pair, "mm": mm_pair}
