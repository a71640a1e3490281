"""The builder contract: builders are the modules of xsim.builders, each with the four entries."""

import pytest

from xsim.builders import BUILDERS, get_builder


def test_every_builder_module_is_found():
    assert {"microbench", "moe", "fa_a2a"} <= set(BUILDERS) and list(BUILDERS) == sorted(BUILDERS)


@pytest.mark.parametrize("name", BUILDERS)
def test_every_builder_declares_the_contract(name):
    module = get_builder(name)
    assert isinstance(module.PARAMS, dict) and module.PARAMS
    for entry in ("build", "predict", "summarize", "size"):
        assert callable(getattr(module, entry)), entry


def test_an_unknown_builder_is_a_key_error():
    with pytest.raises(KeyError):
        get_builder("nope")
