"""What every test module shares."""

import signal

from cores import INDEX_CORE, TEXT_CORE

# The tests of the compiled cores themselves, which import them: not collected where
# simdedup was installed without them (no C compiler).
collect_ignore = [
    *([] if INDEX_CORE else ["test_compiled.py"]),
    *([] if TEXT_CORE else ["test_compiled_text.py"]),
]

# A suite started as a background job (`make test &`, nohup, some CI runners) inherits
# Ctrl-C ignored, and so would every command the Ctrl-C tests start: they would run to
# the end and exit 0. Python installs its own handler only where Ctrl-C is not ignored;
# installing it here gives the commands the default again (a handler does not survive
# exec, an ignored signal does).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
