"""The stages and their errors now live in `kb_dumps.stage_errors`."""

# transitional: explore/grounding still import this path; removed when they move
from kb_dumps.stage_errors import *  # noqa: F403
from kb_dumps.stage_errors import ErrorInfo, KBQAError, Stage  # noqa: F401 - the names most imported
