"""The report's command line, the spark-submit entry, the Java check and the progress line (no Spark)."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pytest

from spark import session
from spark.progress import Progress
from spark.report import add_report_arguments, run_from_args

ROOT = Path(__file__).resolve().parents[1]


def test_arguments_wire_into_a_subcommand():
    parser = argparse.ArgumentParser(prog="p2pubsub")
    sub = parser.add_subparsers(dest="command")
    add_report_arguments(sub.add_parser("report"))
    args = parser.parse_args(["report", "a", "b", "--out", "rep", "--matrix", "king.txt", "--no-progress"])
    assert args.run_dirs == ["a", "b"] and args.out == "rep" and args.matrix == "king.txt"
    assert args.func is run_from_args and args.matrix_format == "auto" and args.master is None


def test_spark_submit_entry_point_runs_as_a_script():
    out = subprocess.run(
        [sys.executable, str(ROOT / "spark" / "report_job.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "--out REPORT_DIR" in out.stdout


def test_missing_java_gives_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(session.JavaNotFoundError, match="Java 17"):
        session.check_java()


def test_old_java_is_refused(monkeypatch, tmp_path):
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"1.8.0_402\"' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert session.java_version(str(java)) == 8
    with pytest.raises(session.JavaNotFoundError, match="version 8"):
        session.check_java()


def test_report_without_java_exits_with_the_message(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    parser = add_report_arguments(argparse.ArgumentParser())
    args = parser.parse_args([str(tmp_path), "--out", str(tmp_path / "out"), "--no-progress"])
    assert run_from_args(args) == 2
    assert "PySpark needs Java 17" in capsys.readouterr().err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only():
    tty = _Tty()
    p = Progress(stream=tty)
    with p.step("replaying"):
        p.note("round 2")
    p.close()
    assert "replaying · round 2" in tty.getvalue() and tty.getvalue().startswith("\r")
    assert [label for label, _ in p.steps_done] == ["replaying"]
    pipe = io.StringIO()
    q = Progress(stream=pipe)
    with q.step("replaying"):
        q.note("round 1")
    q.close()
    assert pipe.getvalue() == ""
