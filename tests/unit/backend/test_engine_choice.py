"""Choosing an engine: clear errors when pyspark or Java is missing, or the options do not fit."""

from __future__ import annotations

import sys

import pytest

import dpsql
from dpsql.backend.engines import spark_engine
from dpsql.errors import InterfaceError


def test_missing_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import pyspark` raise ImportError.
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(InterfaceError, match=r"pip install 'dpsql\[spark\]'") as info:
        dpsql.connect(engine="spark")
    assert info.value.__context__ is None and info.value.__cause__ is None


def test_missing_java_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(spark_engine.shutil, "which", lambda name: None)
    assert spark_engine.java_command() is None
    with pytest.raises(InterfaceError, match="needs Java 17 or 21.*openjdk-17-jre-headless.*JAVA_HOME"):
        dpsql.connect(engine="spark", master="local[1]")


def test_java_home_is_preferred(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert spark_engine.java_command() == str(java)


def test_unknown_engine_and_misplaced_spark_options_are_refused() -> None:
    with pytest.raises(InterfaceError, match="unknown engine 'postgres'"):
        dpsql.connect(engine="postgres")
    with pytest.raises(InterfaceError, match="need engine='spark'"):
        dpsql.connect(master="local[2]")


def test_cli_refuses_spark_options_without_the_spark_engine(capsys: pytest.CaptureFixture[str]) -> None:
    from dpsql.cli import main

    assert main(["--spark-master", "local[2]", "-c", "SELECT 1"]) == 1
    assert "need --engine spark" in capsys.readouterr().err
