"""One microbenchmark point on a platform: the builder's summary of a simulation, engine picked once."""

from helpers import toy_platform
from xsim.builders import microbench
from xsim.des import simulate
from xsim.simulate_point import default_engine, micro_params, simulate_point


def test_micro_params_are_resolved_builder_params():
    params = micro_params("periodic", 4, 1000, 1.0, True, 6, 2)
    assert set(params) == set(microbench.PARAMS)
    assert (params["producers"], params["burst_bytes"], params["gap_us"], params["aligned"]) == (4, 1000.0, 1.0, True)


def test_a_point_is_the_builders_summary_of_its_simulation():
    params, platform = micro_params("periodic", 4, 1000, 1.0, False, 6, 2), toy_platform()
    expected = microbench.summarize(simulate(microbench.build(params, platform), "simpy", trace=False), params)
    assert simulate_point(params, platform, engine="simpy") == expected
    assert simulate_point(params, platform, engine="fast") == expected  # the engines agree bit for bit


def test_the_default_engine_is_the_fast_one_once_it_agrees_with_the_reference():
    assert default_engine(toy_platform()) == "fast"
