"""The CLI contract under generated bad input, for every command (hypothesis).

Each example lays out files (scenarios, profiles, records, existing outputs) in a fresh folder,
runs ``xsim.cli.main`` in it, and asserts: exit 0, or exit 2 with exactly one line on stderr;
no traceback; every file that was there before a failure is byte-identical after it; nothing
outside the folder changed. Runs are kept small with ``XSIM_MEMORY_LIMIT`` (a run the
budget refuses is an exit 2 like any other bad input).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MICRO = ROOT / "calibration" / "records" / "h200-nvlink-x2-micro.jsonl"
PROFILE = json.loads((ROOT / "calibration" / "profiles" / "paper-8gpu.json").read_text())
SCENARIO = tomllib.loads((ROOT / "scenarios" / "periodic.toml").read_text())
SCENARIO["params"].update(producers=3, bursts=6, warmup_bursts=1)
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


def _records() -> list[dict]:
    """A few periodic and isolated store records of the shipped micro file."""
    out, kinds = [], {}
    for line in MICRO.read_text().splitlines():
        r = json.loads(line)
        key = (r["kind"], r["params"]["aligned"])
        if kinds.get(key, 0) < 3 and r["params"].get("mechanism") == "st.v4":
            kinds[key] = kinds.get(key, 0) + 1
            out.append(r)
    return out


RECORDS = _records()

# ---- values ------------------------------------------------------------------------------------
NUMBERS = st.sampled_from(["0", "-1", "1", "2.5", "1e999", "-1e999", "nan", "inf", "1e308", "0x10", "",
                           " ", "3.", ".5", "1e-320", "99999999999999999999999"])
UNITS = st.sampled_from(["", "B", "KB", "MiB", "GB", "us", "ns", "s", "GB/s", "TB/s", "µs", "x", "/"])
JUNK = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
GOOD = {"bytes": ["8KB", "32KB", "1MiB", "4096"], "us": ["0", "0.5", "3us", "500ns"], "gbps": ["700GB/s", "90"],
        "int": ["1", "2", "3"], "bool": ["true", "false"], "str": ["xstage", "completion-coupled", "periodic"]}
BAD = st.one_of(st.builds(lambda n, u: n + u, NUMBERS, UNITS), JUNK)
VALUES = st.one_of(st.sampled_from([v for vs in GOOD.values() for v in vs]), BAD)


def value(kind: str):
    """A value for a parameter of ``kind``: mostly a good one, else anything."""
    return st.one_of(st.sampled_from(GOOD[kind]), st.sampled_from(GOOD[kind]), VALUES)


KINDS = {"producers": "int", "bursts": "int", "warmup_bursts": "int", "staging_depth": "int", "peers": "int",
         "burst_bytes": "bytes", "gap_us": "us", "aligned": "bool", "barrier_waits_drain": "bool",
         "coupling": "str", "mode": "str"}
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.sampled_from(
    [0.0, -1.0, 1e308, 1e-300, 2.5]), st.text(max_size=6), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2), st.just("NAN"), st.just("INF"))
PARAM_KEYS = st.sampled_from(sorted(SCENARIO["params"]) + ["mode", "nope", "", "gap"])


def _dump_json(value) -> str:
    text = json.dumps(value)
    return text.replace('"NAN"', "NaN").replace('"INF"', "Infinity")  # non-finite literals Python accepts


@st.composite
def mutated(draw, document):
    """A copy of ``document`` with a few values replaced, removed or retyped at any depth."""
    doc = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        node = doc
        while isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
            if not isinstance(node[key], dict) or draw(st.booleans()):
                action = draw(st.sampled_from(["set", "set", "delete"]))
                if action == "delete":
                    del node[key]
                else:
                    node[key] = draw(JSON_VALUES)
                break
            node = node[key]
    return doc


def _toml_value(value) -> str:
    if value is None or value == "NAN":
        return "nan"
    if value == "INF":
        return "inf"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


def _toml(doc: dict) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{k}]")
            lines += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


RAW = st.sampled_from([b"", b"\xff\xfe\x00", b"{", b"[1, 2]", b"null", b'{"a": 1e999}', b"name = \n",
                       b"\n\n", "é".encode("latin-1")])


@st.composite
def input_file(draw, kind: str):
    """(file name, bytes) of a scenario (TOML), profile (JSON) or records file (JSONL)."""
    choice = draw(st.sampled_from(["valid", "valid", "mutated", "mutated", "raw"]))
    if kind == "scenario":
        doc = SCENARIO if choice == "valid" else draw(mutated(SCENARIO))
        data = _toml(doc).encode() if choice != "raw" else draw(RAW)
        return "s.toml", data
    if kind == "profile":
        doc = PROFILE if choice == "valid" else draw(mutated(PROFILE))
        data = _dump_json(doc).encode() if choice != "raw" else draw(RAW)
        return "p.json", data
    lines = []
    for r in RECORDS:
        doc = draw(mutated(r)) if choice == "mutated" and draw(st.integers(0, 5)) == 0 else r
        lines.append(_dump_json(doc))
    data = ("\n".join(lines) + "\n").encode() if choice != "raw" else draw(RAW)
    if draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]  # cut anywhere, as a crash would
    return "r.jsonl", data


# Output paths: fresh (with missing folders), an existing file, a file where a folder should be,
# the folder itself, a special file.
OUTPUTS = st.sampled_from(["out.x", "new/deep/out.x", "existing.x", "blocker/out.x", ".", "blocker", "/dev/null/x"])
EXISTING = {"existing.x": b"keep me\n", "blocker": b"a file, not a folder\n"}


def _output(name: str, suffix: str) -> str:
    return name.replace(".x", suffix)


COMMANDS = ("model", "simulate", "sweep", "calibrate", "report", "bench", "listings")


@st.composite
def cases(draw, commands=COMMANDS):
    """(argv, files): one command line and the files it finds."""
    files = {_output(k, s): v for k, v in EXISTING.items() for s in (".json", ".html", ".jsonl")}
    command = draw(st.sampled_from(commands))
    argv = []
    if command in ("model", "simulate", "sweep", "report") and draw(st.booleans()):
        name, data = draw(input_file("profile"))
        files[name] = data
        argv += ["--platform", draw(st.sampled_from([name, name, "paper-8gpu", "nope", "/dev/zero"]))]
    if command in ("model", "simulate", "sweep") and draw(st.integers(0, 3)) == 0:
        option, kind = draw(st.sampled_from([("--t-iss0-us", "us"), ("--drain-gbps", "gbps"),
                                             ("--capacity-bytes", "bytes"), ("--load-gate-bytes", "bytes")]))
        argv += [option, draw(value(kind))]
    if command == "model":
        argv = ["model", "--volume-bytes", draw(value("bytes")), "--gap-us", draw(value("us"))] + argv
        for option in ("--producers", "--peers"):
            if draw(st.booleans()):
                argv += [option, draw(st.sampled_from(["1", "8", "132", "0", "-1", "1e3", "x", "100001"]))]
    elif command in ("simulate", "sweep"):
        name, data = draw(input_file("scenario"))
        files[name] = data
        scenario = draw(st.sampled_from([name, name, "periodic", "isolated", "fa-a2a-paper", "nope", "/dev/zero",
                                         "missing.toml"]))
        sets = []
        for _ in range(draw(st.integers(0, 3))):
            key = draw(PARAM_KEYS)
            sets += ["--set", f"{key}={draw(value(KINDS.get(key, 'int')))}"]
        if scenario in ("periodic", "isolated"):
            sets = ["--set", "producers=2", "--set", "bursts=4", "--set", "warmup_bursts=1"] + sets
        argv = [command, scenario, *sets, "--engine", draw(st.sampled_from(["simpy", "fast"]))] + argv
        if command == "simulate":
            if draw(st.booleans()):
                argv += ["--out", _output(draw(OUTPUTS), "")]
        else:
            for _ in range(draw(st.integers(1, 2))):
                key = draw(PARAM_KEYS)
                good = value(KINDS.get(key, "int"))
                spec = draw(st.one_of(good, st.builds(lambda a, b: f"{a},{b}", good, good),
                                      st.builds(lambda a, b, c: f"{a}:{b}:{c}", good, good, good),
                                      st.sampled_from(["1,2", "0:2:1", "2:0:-1", "8KB,16KB", "a,,b"])))
                argv += ["--grid", f"{key}={spec}"]
            argv += ["--jobs", draw(st.sampled_from(["1", "1", "2", "0", "-2", "64"])), "--no-plots",
                     "--out", _output(draw(OUTPUTS), "")]
            if draw(st.booleans()):
                argv.append("--resume")
            if draw(st.integers(0, 4)) == 0:  # bad ones only: a good one starts a cluster (slow)
                argv += ["--scheduler", draw(st.sampled_from(["local:0", "local:x", "", "tcp://a b", "local:-1"]))]
    elif command in ("calibrate", "report"):
        name, data = draw(input_file("records"))
        files[name] = data
        records = draw(st.sampled_from([name, name, "missing.jsonl", "/dev/zero", "."]))
        output = draw(st.sampled_from([_output(draw(OUTPUTS), ".json" if command == "calibrate" else ".html"),
                                       name]))
        if command == "calibrate":
            argv = ["calibrate", records, "-o", output, "--fair"]
        else:
            argv = ["report", "--records", records, "--no-des", "--experiment", "micro"] + argv
            if output.endswith(".html") and not output.startswith(("out", "new")) or output == name:
                argv += ["-o", output]  # only bad paths: a good one renders PNGs (slow)
    elif command == "bench":
        argv = ["bench", draw(st.sampled_from(["micro", "moe"])), "--out", _output(draw(OUTPUTS), ".jsonl")]
    else:
        argv = [draw(st.sampled_from(["platforms", "scenarios"]))]
    if draw(st.booleans()):
        argv.append("--json")
    return argv, files


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _tree_state(root: Path) -> dict[str, tuple[int, int]]:
    skip = {".git", "__pycache__", ".hypothesis", ".pytest_cache", ".ci-venv"}
    out = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in names:
            st_ = os.stat(os.path.join(folder, name))
            out[os.path.join(folder, name)] = (st_.st_size, st_.st_mtime_ns)
    return out


@pytest.fixture
def fuzz_env(tmp_path, monkeypatch):
    """Small runs (a 70 MiB budget), no GPUs, and the repo checked untouched at the end."""
    import hwkernels.launch

    monkeypatch.setenv("XSIM_MEMORY_LIMIT", "70MiB")
    monkeypatch.setattr(hwkernels.launch, "gpu_count", lambda: 0)
    before = _tree_state(ROOT)
    counter = iter(range(10**6))
    yield lambda: tmp_path / f"ex{next(counter)}"
    assert _tree_state(ROOT) == before, "a command changed files outside its folder"


def _run_case(folder: Path, argv: list[str], files: dict[str, bytes]) -> None:
    folder.mkdir()
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    before = _snapshot(folder)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(cwd)
    stderr = err.getvalue()
    assert "Traceback" not in stderr, (argv, stderr)
    assert code in (0, 2), (argv, code, stderr)
    if code == 2:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("xsim: error: "), (argv, stderr)
        after = _snapshot(folder)
        changed = [n for n, data in before.items() if after.get(n) != data]
        assert not changed, (argv, stderr, changed)
    else:
        json.loads(out.getvalue()) if "--json" in argv else None
    leftovers = [p.name for p in folder.rglob(".*.tmp*")]
    assert not leftovers, (argv, leftovers)  # no temporary file survives, success or not


@settings(SETTINGS, max_examples=60)
@given(case=cases(("model", "bench", "listings")))
def test_model_bench_and_listings_keep_the_contract(fuzz_env, case):
    _run_case(fuzz_env(), *case)


@settings(SETTINGS, max_examples=50)
@given(case=cases(("calibrate", "report")))
def test_records_commands_keep_the_contract(fuzz_env, case):
    _run_case(fuzz_env(), *case)


@settings(SETTINGS, max_examples=50)
@given(case=cases(("simulate", "sweep")))
def test_scenario_commands_keep_the_contract(fuzz_env, case):
    _run_case(fuzz_env(), *case)
