"""A Ctrl-C held while a step that must not be cut short is done: a message to or from a
worker, a read whose bytes must not be lost. Python runs a signal's handler between
two steps of its code, also as a call returns: a KeyboardInterrupt raised there left
a message to a worker half sent, or lost the bytes a read had taken from a pipe. Held,
it is raised once the step is whole.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

try:  # signal.signal without its wrapper's enum conversions (held)
    from _signal import signal as _set_handler
except ImportError:  # another Python than CPython
    _set_handler = signal.signal


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A Ctrl-C (or the CLI's SIGTERM or SIGHUP) during the block is raised once the
    block is done, in the main thread. Around a message to or from a worker: raised
    halfway, it left the pipe in mid-message, the next answer read from it was garbage,
    and the run hung after Ctrl-C (2 runs in 10 of a default `scan`). Never around a
    call that may wait long: a Ctrl-C would wait with it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    # _signal's own function: a handler set and put back took 6.2 µs through
    # signal.signal, which converts both to and from enums, and 0.56 µs so (timeit);
    # two messages a 1 MiB chunk, 0.07 s of the main process's CPU in `fingerprint -j2`
    # of 10M lines. It returns the same handler, SIG_DFL and SIG_IGN as ints, which it
    # takes back.
    previous = _set_handler(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        _set_handler(signal.SIGINT, previous)
        if caught and callable(previous):
            # each one handed on, so that the CLI counts a second one (cli._Writing)
            if (interrupt := each_then_interrupt(lambda signum: previous(signum, None), caught)) is not None:
                raise interrupt
        elif any(signum != signal.SIGINT for signum in caught):  # the CLI's SIGTERM or SIGHUP
            raise KeyboardInterrupt  # passed on where SIGINT is ignored


def done_whole(call: Callable[[], T]) -> tuple[T, KeyboardInterrupt | None]:
    """call() with a Ctrl-C held (held), and the Ctrl-C that came meanwhile, for the
    caller to raise once it has handed the result on; one raised before call() is
    done (where held() does not hold) is raised here. Raised at once, it lost what the
    call did: an answer read from a worker, bytes read from a pipe."""
    done = False
    try:
        with held():
            result = call()
            done = True
    except KeyboardInterrupt as e:
        if not done:
            raise
        return result, e
    return result, None


def each_then_interrupt(call: Callable[[Any], Any], items: Iterable[Any]) -> KeyboardInterrupt | None:
    """call(item) for every item, a Ctrl-C raised by one held until all are done: the
    first of them, to raise once what goes with the items is in place too."""
    first: KeyboardInterrupt | None = None
    for item in items:
        try:
            call(item)
        except KeyboardInterrupt as e:
            first = first or e
    return first
