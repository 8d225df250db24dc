"""The translator settings now live in `kbqa.settings` (`TranslatorSettings`, one module for every section)."""

# transitional: explore/grounding still import this path; removed when they move
from kbqa.settings import TranslatorSettings as ModelSettings
from kbqa.settings import get_translator_settings as get_model_settings

__all__ = ["ModelSettings", "get_model_settings"]
