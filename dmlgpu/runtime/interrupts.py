"""Ctrl-C while GPU work is in flight: held back, then raised once the call is done.

Owns ``interrupts_held``; touches only Python's signal handling.
"""

from __future__ import annotations

import _signal
import signal
import threading

_holding: list = []  # an entry while the main thread holds Ctrl-C back


class interrupts_held:
    """Hold Ctrl-C back while GPU work is in flight on the main thread, and raise it after.

    A KeyboardInterrupt raised inside a map callback (which runs during a poll) or inside a
    finalizer is printed and swallowed by Python, which would leave the caller's loop
    running; and one raised between a map and its unmap would leave a buffer mapped. So the
    default SIGINT handler is swapped, for the few milliseconds of a call, for one that
    notes the signal; the KeyboardInterrupt follows as soon as the call is done. A second
    Ctrl-C while held interrupts at once. Other threads never receive KeyboardInterrupt, and
    a handler the program installed itself is left alone. (``_signal`` is what ``signal``
    wraps; its enum conversions cost 30 us a call, the C functions 3.)
    """

    __slots__ = ("noted", "holding")

    def __enter__(self):
        self.holding = not _holding and threading.get_ident() == _MAIN_IDENT and \
            _signal.getsignal(_SIGINT) is _DEFAULT_HANDLER
        if self.holding:
            noted = self.noted = []

            def note(signum, frame):
                if noted:
                    raise KeyboardInterrupt
                noted.append(signum)

            _signal.signal(_SIGINT, note)
            _holding.append(True)
        return self

    def __exit__(self, *exc) -> None:
        if self.holding:
            _holding.pop()
            _signal.signal(_SIGINT, _DEFAULT_HANDLER)
            if self.noted and exc[0] is None:  # (an error from the block goes on as it is)
                raise KeyboardInterrupt


_MAIN_IDENT = threading.main_thread().ident
_SIGINT = int(signal.SIGINT)
_DEFAULT_HANDLER = signal.default_int_handler
