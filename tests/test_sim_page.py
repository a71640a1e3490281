"""One simulation's page rows: the same human units on the page and on the terminal."""

from xsim.report.sim_page import summary_rows


def test_summary_rows_in_human_units():
    summary = {"period_us": {"mean": 10.49, "median": 10.68, "p10": 7.42, "p90": 14.09, "n": 19800},
               "burst_issue_us": {"mean": 971.3, "median": 1036.0, "p10": 635.6, "p90": 1170.0, "n": 150},
               "makespan_us": 2449.0, "q_peak_bytes": 4.325e6}
    assert summary_rows(summary) == [
        ["period_us", "10.5 µs", "10.7 µs", "7.42 µs", "14.1 µs", "19800"],
        ["burst_issue_us", "971 µs", "1.04 ms", "636 µs", "1.17 ms", "150"],
        ["makespan_us", "2.45 ms", "", "", "", ""],
        ["q_peak_bytes", "4.12 MiB", "", "", "", ""],
    ]
