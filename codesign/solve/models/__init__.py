"""Models a harness can drive: offline ones here, litellm endpoints in ``litellm_model``."""

from codesign.solve.models.offline import NoopModel, OracleModel

__all__ = ["NoopModel", "OracleModel"]
