"""The cyclic garbage collector, set for start-up and for a server that holds many turns at once.

CPython's collector scans every tracked container of a generation when it runs; a server keeps
its whole start-up (modules, the app, the agent's definition: ~10^5 objects) alive for good, and
the oldest generation's collections re-scan all of it (~110 ms each at 100 sessions at once).
Once the server listens, :func:`settle_heap` collects once and freezes what survived
(``gc.freeze``: moved to a permanent generation no collection scans), and lets the youngest
generation grow to :data:`YOUNG_THRESHOLD` allocations before it is collected (700 by default:
a turn allocates thousands of short-lived containers, most of them freed by reference counting
long before a collection would look at them). With 1 000 sessions starting at once this took the
server's CPU per turn down by about a tenth (``bench/hotpath.py``'s thousand row); memory is not
changed measurably (``start``'s idle RSS). A threshold raised already (by a user's
``sitecustomize``, say) is kept.

Start-up itself (importing some 650 modules, assembling the agent) ran a dozen collections of the
young generation per 10 000 allocations and several of the whole heap: the command line raises the
young threshold first thing (:func:`raise_young_threshold`), for every command.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "raise_young_threshold", "settle_heap"]

YOUNG_THRESHOLD = 10_000


def raise_young_threshold() -> None:
    """The youngest generation collected every :data:`YOUNG_THRESHOLD` allocations (a higher
    threshold, or a collector switched off on purpose, is kept)."""
    young, middle, old = gc.get_threshold()
    if young:  # 0: the collector was switched off on purpose
        gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


def settle_heap() -> None:
    """Collect once, freeze the survivors, raise the youngest generation's threshold."""
    gc.collect()
    gc.freeze()
    raise_young_threshold()
