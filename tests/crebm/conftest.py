"""The smoke-scale pipeline of CREBM, trained once for the whole package's tests."""

import pytest


@pytest.fixture(scope="session")
def crebm_trained():
    """Everything the experiment ``crebm/pipeline`` trains at smoke scale, seed 0 (shared by test_core and
    test_claims: training takes most of the experiment's time)."""
    from icml24.crebm.experiments import train_all

    return train_all("smoke", 0)
