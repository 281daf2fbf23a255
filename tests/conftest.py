import pytest

from fmigen.pipeline import build_fmu
from fmigen.validate import validate


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fmus")


@pytest.fixture(scope="session")
def fourbar_fmu(fmu_dir):
    path, compiled = build_fmu("fourbar", fmu_dir / "fourbar.fmu", solver="rk4", step=1e-3)
    return path, compiled


_reports = {}


def cached_validate(mech, **kw):
    """validate() is deterministic; several tests look at the same run."""
    key = (mech, tuple(sorted(kw.items())))
    if key not in _reports:
        _reports[key] = validate(mech, **kw)
    return _reports[key]
