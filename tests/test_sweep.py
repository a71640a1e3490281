"""xsim sweep: grid parsing, the tidy table, plots, errors and resume."""

import csv
import json

import pytest

from xsim.cli import main
from xsim.des import simulate
from xsim.params import ParamError
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario
from xsim.sweep import MAX_POINTS, parse_axis, plan, point_id, run_sweep

SMALL = ["--set", "producers=4", "--set", "bursts=12", "--set", "warmup_bursts=2"]
DECLARED = load_scenario("periodic").module.PARAMS


def sweep(capsys, tmp_path, *args):
    code = main(["sweep", "periodic", *args, *SMALL, "--out", str(tmp_path), "--json"])
    captured = capsys.readouterr()
    return code, captured


def rows_of(tmp_path):
    with open(tmp_path / "rows.csv") as fh:
        return list(csv.DictReader(fh))


def test_range_takes_the_key_unit_and_includes_stop():
    assert parse_axis("burst_bytes=4KB:16KB:4KB", DECLARED).values == (4096.0, 8192.0, 12288.0, 16384.0)
    assert parse_axis("gap_us=0:1:0.25", DECLARED).values == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert parse_axis("gap_us=500ns:1.5us:0.5us", DECLARED).values == (0.5, 1.0, 1.5)
    assert parse_axis("gap_us=3:1:-1", DECLARED).values == (3.0, 2.0, 1.0)
    assert parse_axis("coupling=xstage,completion-coupled", DECLARED).values == ("xstage", "completion-coupled")


def test_plan_is_the_cross_product_first_axis_slowest():
    s = load_scenario("periodic")
    points = plan(s, [parse_axis("gap_us=1,2", DECLARED), parse_axis("producers=4,8,16", DECLARED)])
    assert points[:4] == [{"gap_us": 1.0, "producers": 4}, {"gap_us": 1.0, "producers": 8},
                          {"gap_us": 1.0, "producers": 16}, {"gap_us": 2.0, "producers": 4}]
    assert len(points) == 6


def test_one_axis_sweep_table_and_plot(capsys, tmp_path):
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=0:4:2", "--jobs", "1")
    assert code == 0
    doc = json.loads(out.out)
    assert doc["points"] == 3 and doc["rows"] == 3 and doc["skipped"] == 0
    rows = rows_of(tmp_path)
    assert [float(r["gap_us"]) for r in rows] == [0.0, 2.0, 4.0]
    for key in ("producers", "burst_bytes", "coupling", "issue_us_mean", "issue_us_median", "issue_us_p10",
                "issue_us_p90", "period_us_mean", "stall_us_p90", "makespan_us", "pred_issue_us",
                "pred_g_star_us"):
        assert key in rows[0], key
    assert "plotly" in (tmp_path / "sweep.html").read_text()[:100_000].lower()


def test_rows_equal_a_direct_simulation(capsys, tmp_path):
    code, _ = sweep(capsys, tmp_path, "--grid", "burst_bytes=8KB,64KB", "--jobs", "2", "--engine", "simpy")
    assert code == 0
    platform = resolve_platform(None)
    for row in map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines()):
        s = load_scenario("periodic").with_overrides(
            ["producers=4", "bursts=12", "warmup_bursts=2", f"burst_bytes={row['burst_bytes']}"])
        summary = s.summarize(simulate(s.build(platform), "simpy"))
        assert row["issue_us_mean"] == pytest.approx(summary["issue_us"]["mean"], rel=1e-12)
        assert row["makespan_us"] == pytest.approx(summary["makespan_us"], rel=1e-12)
        assert row["pred_issue_us"] == pytest.approx(s.predict(platform)["issue_us"], rel=1e-12)


def test_two_axis_sweep_writes_heatmaps(capsys, tmp_path):
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=0,5", "--grid", "burst_bytes=8KB,32KB", "--jobs", "2")
    assert code == 0
    assert json.loads(out.out)["rows"] == 4
    assert "heatmap" in (tmp_path / "sweep.html").read_text().lower()


@pytest.mark.parametrize("grid, message", [
    ("gap_us=5:1:1", "range is empty"),
    ("gap_us=0:10:0", "step is zero"),
    ("nope=1,2", "unknown key 'nope'"),
    ("gap_us=2MB", "unit"),
    ("burst_bytes=1:2:1us", "unit"),
    ("gap_us=0:1000:0.01", f"cap of {MAX_POINTS}"),
    ("aligned=0:1:1", "takes a list"),
    ("gap_us", "KEY=START:STOP:STEP"),
    ("gap_us=-1,2", ">= 0"),
])
def test_bad_grid_is_one_line_exit_2(capsys, tmp_path, grid, message):
    code, out = sweep(capsys, tmp_path, "--grid", grid)
    assert code == 2
    assert out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xsim: error:") and message in lines[0]
    assert "Traceback" not in out.err


def test_too_many_points_over_two_axes(capsys, tmp_path):
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=0:199:1", "--grid", "burst_bytes=1KB:101KB:1KB")
    assert code == 2 and "more than the cap" in out.err


def test_grid_and_set_of_one_key(capsys, tmp_path):
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=1,2", "--set", "gap_us=3")
    assert code == 2 and "both as --set and as --grid" in out.err


def test_a_point_that_cannot_be_built(capsys, tmp_path):
    code, out = sweep(capsys, tmp_path, "--grid", "warmup_bursts=1,20", "--jobs", "1")
    assert code == 2 and "warmup_bursts" in out.err.strip().splitlines()[-1]


def test_interrupted_sweep_keeps_rows_and_resumes(capsys, tmp_path):
    scenario = load_scenario("periodic").with_overrides(["producers=4", "bursts=12", "warmup_bursts=2"])
    points = plan(scenario, [parse_axis("gap_us=0:5:1", DECLARED)])
    seen = []

    def stop_after_two(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(scenario, resolve_platform(None), points, tmp_path, jobs=1, on_row=stop_after_two)
    assert len(rows_of(tmp_path)) == 2
    with open(tmp_path / "rows.jsonl", "a") as fh:
        fh.write('{"point": "torn')  # a write cut short by the interruption
    kept = (tmp_path / "rows.jsonl").read_text().splitlines()[:2]

    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=0:5:1", "--jobs", "2", "--resume")
    assert code == 0
    doc = json.loads(out.out)
    assert doc["skipped"] == 2 and doc["rows"] == 6
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert lines[:2] == kept
    assert sorted(json.loads(x)["point"] for x in lines) == sorted(point_id(p) for p in points)
    assert len(rows_of(tmp_path)) == 6


def test_resume_of_a_finished_sweep_runs_nothing(capsys, tmp_path):
    assert sweep(capsys, tmp_path, "--grid", "gap_us=1,2", "--jobs", "1")[0] == 0
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=1,2", "--resume")
    assert code == 0 and json.loads(out.out)["skipped"] == 2 and json.loads(out.out)["rows"] == 2


def test_an_existing_sweep_is_not_overwritten(capsys, tmp_path):
    assert sweep(capsys, tmp_path, "--grid", "gap_us=1", "--jobs", "1")[0] == 0
    before = (tmp_path / "rows.jsonl").read_text()
    code, out = sweep(capsys, tmp_path, "--grid", "gap_us=2")
    assert code == 2 and "--resume" in out.err
    assert (tmp_path / "rows.jsonl").read_text() == before


def test_parse_axis_rejects_repeated_keys():
    with pytest.raises(ParamError, match="twice"):
        plan(load_scenario("periodic"), [parse_axis("gap_us=1", DECLARED), parse_axis("gap_us=2", DECLARED)])
