"""The bounds every scan keeps, whatever the log's size (one place, so that a test can lower one for all readers)."""

DETECT_LINES = 5000  # lines at the head of a log read one by one: the trainer's name and banners are looked for there
MAX_LINE = 1 << 20  # longer lines are not parsed for metrics (a rollout dump, a base64 image)
MAX_METRIC_ROWS = 200_000  # bounded memory: beyond this, every other row is dropped (downsampling)
MAX_EVAL_ROWS = 10_000
MAX_CASCADE = 8  # errors kept of one cascade
MAX_LAUNCHES = 16  # superseded launches' crashes kept
MAX_BARS = 64  # progress bars told apart (by their totals)
MIN_GENERIC_ROWS = 3  # a generic line shape must recur this often to be metrics (a config print happens once)
MAX_LOG_BYTES = 4 << 30  # a log is read up to here (noted): a larger one is a sparse file or a runaway dump
LOG_SECONDS = 120.0  # one log's scan; past it the rest is left unread (noted), as a stalled mount never ends
MAX_ROW_KEYS = 4096  # names kept of one console row (as the file readers' MAX_KEYS): a dialect's dicts are bounded
