"""Who times when, for the two sides of a screen measuring the same keys in lockstep.

Each side is a long-lived process running the same tests in the same order. A *key* names one
measurement: ``(item index in the batch, measurement index within the item)``, so both sides
reach the same keys in the same order unless one of them skips, fails or stops. At a key a side

1. *enters* (it starts the untimed steps: compiling, warm-up, capture),
2. *requests* a turn whenever it is ready to time a portion, and reports each turn *turned*,
3. *leaves* once its measurement is done, and waits to be *released*.

:class:`Lockstep` answers each event with the actions it allows: ``Grant(side, paired)`` and
``Release(side)``. Its rules:

* At a key both sides reach, no turn is granted until both have requested one (all untimed work
  of both is done), only one side times at a time, the turns follow ``order`` (A B B A, or its
  mirror), and neither side is released until both have left: the untimed work of the next
  measurement never overlaps the other side's timed work.
* A side whose other side will not reach the key (the other passed it, finished the batch, or
  died) is granted and released at once, and its grants say ``paired=False``.
* Turns beyond ``order`` (a timer that fell back to another one inside the measurement) are
  granted one at a time in the order they were asked for.

The class is pure state: the controller feeds it the sides' messages and sends what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Key = tuple[int, int]
_LAST = 1 << 62  # a measurement index past every real one
SIDES = ("A", "B")
#: side A's turns before, between and after side B's: A B B A
BALANCED = ("A", "B", "B", "A")


def order_for(round_index: int) -> tuple[str, ...]:
    """A B B A in odd rounds (1, 3, ...), the mirror B A A B in even ones."""
    return BALANCED if round_index % 2 == 1 else tuple(_other(s) for s in BALANCED)


def _other(side: str) -> str:
    return "B" if side == "A" else "A"


def first_of(rnd: int) -> str:
    """The side whose worker starts first in round ``rnd`` (it alternates by round); with
    shared inputs it allocates the round's block."""
    return "A" if rnd % 2 else "B"


@dataclass(frozen=True)
class Grant:
    side: str
    paired: bool


@dataclass(frozen=True)
class Release:
    side: str


Action = Grant | Release


@dataclass
class _Side:
    key: Key | None = None  # the key it is at, until released
    wants: bool = False  # a turn requested and not yet granted
    asked: int = 0  # order of its pending request among all requests (FIFO for extra turns)
    left: bool = False  # left its measurement, waiting to be released
    passed: Key | None = None  # the last key it was released from (or will never reach again)
    done: bool = False  # finished the batch or died: reaches no further key


@dataclass
class Lockstep:
    order: tuple[str, ...] = BALANCED
    sides: dict[str, _Side] = field(default_factory=lambda: {s: _Side() for s in SIDES})
    timing: str | None = None  # the side holding a turn
    step: int = 0  # position in ``order`` at the current shared key
    requests: int = 0
    #: keys each side measured without the other (for the record)
    unpaired: dict[str, list[Key]] = field(default_factory=lambda: {s: [] for s in SIDES})

    # -- events ------------------------------------------------------------------------------

    def enter(self, side: str, key: Key) -> list[Action]:
        me = self.sides[side]
        if me.key is not None:
            raise ValueError(f"side {side} entered {key} while still at {me.key}")
        if me.passed is not None and key <= me.passed:
            raise ValueError(f"side {side} entered {key} after {me.passed}: keys must increase")
        me.key, me.left, me.wants = key, False, False
        if self._shared():
            self.step = 0
        return self._decide()

    def request(self, side: str) -> list[Action]:
        me = self.sides[side]
        if me.key is None or me.left:
            raise ValueError(f"side {side} asked for a turn outside a measurement")
        me.wants = True
        self.requests += 1
        me.asked = self.requests
        return self._decide()

    def turned(self, side: str) -> list[Action]:
        if self.timing != side:
            raise ValueError(f"side {side} ended a turn it did not hold")
        self.timing = None
        if self._shared():
            self.step += 1
        return self._decide()

    def leave(self, side: str) -> list[Action]:
        me = self.sides[side]
        if me.key is None:
            raise ValueError(f"side {side} left no measurement")
        if self.timing == side:
            self.timing = None  # a turn cut short by an error
        me.left, me.wants = True, False
        return self._decide()

    def finished(self, side: str) -> list[Action]:
        """``side`` reaches no further key: it finished its batch, or its process died."""
        me = self.sides[side]
        me.done, me.wants = True, False
        if self.timing == side:
            self.timing = None
        if me.key is not None:
            self._settle(side)
        return self._decide()

    def item_done(self, side: str, item: int) -> list[Action]:
        """``side`` finished item ``item`` (passed, failed or skipped): it reaches no further key
        of it, and the other side measures that item's remaining keys alone."""
        me = self.sides[side]
        if me.key is not None and me.key[0] <= item:
            raise ValueError(f"side {side} finished item {item} inside measurement {me.key}")
        end = (item, _LAST)
        if me.passed is None or end > me.passed:
            me.passed = end
        return self._decide()

    # -- rules -------------------------------------------------------------------------------

    def _shared(self) -> bool:
        a, b = self.sides["A"], self.sides["B"]
        return a.key is not None and a.key == b.key

    def _alone(self, side: str) -> bool:
        """The other side will never be at ``side``'s key."""
        me, other = self.sides[side], self.sides[_other(side)]
        assert me.key is not None
        if other.done and other.key != me.key:
            return True
        if other.key is not None and other.key > me.key:
            return True
        return other.key is None and other.passed is not None and other.passed >= me.key

    def _settle(self, side: str) -> None:
        me = self.sides[side]
        me.passed, me.key, me.left, me.wants = me.key, None, False, False

    def _decide(self) -> list[Action]:
        out: list[Action] = []
        while True:
            action = self._next()
            if action is None:
                return out
            out.append(action)

    def _next(self) -> Action | None:
        shared = self._shared()
        for side in SIDES:
            me = self.sides[side]
            if me.key is None:
                continue
            if not shared and self._alone(side):
                if me.left:
                    self._settle(side)
                    return Release(side)
                if me.wants and self.timing is None:
                    if me.key not in self.unpaired[side]:
                        self.unpaired[side].append(me.key)
                    return self._grant(side, paired=False)
        if not shared:
            return None
        a, b = self.sides["A"], self.sides["B"]
        if a.left and b.left:
            self._settle("A")  # B, now alone at a key A passed, is released next
            return Release("A")
        if self.timing is not None:
            return None
        if self.step == 0 and not all(s.wants or s.left for s in (a, b)):
            return None  # both sides' untimed work first
        while self.step < len(self.order) and self.sides[self.order[self.step]].left:
            self.step += 1  # a side that left (an error) takes no more of its turns
        if self.step < len(self.order):
            side = self.order[self.step]
            return self._grant(side, paired=True) if self.sides[side].wants else None
        waiting = [s for s in SIDES if self.sides[s].wants]
        if waiting:
            return self._grant(min(waiting, key=lambda s: self.sides[s].asked), paired=True)
        return None

    def _grant(self, side: str, paired: bool) -> Grant:
        self.sides[side].wants = False
        self.timing = side
        return Grant(side, paired)
