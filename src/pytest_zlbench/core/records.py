"""Rows, run identities and their on-disk forms (pure: no pytest, torch or triton).

A *row* is one measurement. A *run identity* describes the run that produced rows. Both round-trip
through JSON; files are written atomically (temp file in the same directory, then ``os.replace``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA = 1

#: The seven caliber fields, in order. Two runs are comparable only when all are equal.
CALIBER_FIELDS: tuple[str, ...] = (
    "backend",
    "device",
    "timer",
    "bench_level",
    "shape_mode",
    "tuner_cache",
    "direct_repeat",
)
#: ``bench_level`` of a run without FlagGems' ``--level``. It was ``n/a`` before, which pandas
#: (and most CSV readers) read as a missing value; an identity that says ``n/a`` reads as this
NO_LEVEL = "unset"
_OLD_NO_LEVEL = "n/a"
AUTOTUNE_MODES: tuple[str, ...] = ("record", "replay", "off")
TUNER_CACHES: tuple[str, ...] = ("isolated", "shared", "inherited")
TIMERS: tuple[str, ...] = ("graph", "kernel", "direct")

IDENTITY_FILE = "run_identity.json"
ROWS_FILE = "rows.jsonl"
SUMMARY_FILE = "summary.tsv"
LOG_FILE = "run.log"
IR_FILE = "ir.json"
COMPLETE_FILE = ".complete"
# each row as it is measured, appended by the measuring process (rows.partial.gwK.jsonl from an
# xdist worker); removed once the run is complete, so they remain only when it was killed or
# interrupted before its end (SIGKILL, a test timeout's os._exit, Ctrl-C): never read as a run
PARTIAL_ROWS_FILE = "rows.partial.jsonl"


#: (p80 - p20) / p50 above which a measurement is less certain than its median, per timer. On
#: an H200 graph-timed microsecond rows spread 1-4 % and tensor-core GEMMs held at the card's
#: power cap 5-17 % (docs/PERFORMANCE.md). Direct timings spread wider as a rule (each sample is
#: one call after an L2 flush; on the cpu backend, the host clock under whatever else runs): a
#: quarter of the median marks one whose middle is unsettled, e.g. a CPU row under load that read
#: p20 5.3 ms against p50 34.5 ms.
UNSTEADY_SPREAD: dict[str, float] = {"graph": 0.05, "kernel": 0.05, "direct": 0.25}


class RecordError(ValueError):
    """A file or value that cannot be a valid record; the message is one line naming the problem."""


@dataclass(frozen=True)
class Spread:
    """Within-run spread of one latency's samples, in milliseconds."""

    p20: float
    p50: float
    p80: float
    n: int
    calls: int | None = None  # the calls each sample averages (a graph's); None: one, or unknown

    @property
    def rel(self) -> float:
        """(p80 - p20) / p50: the relative width of the middle of the sample distribution."""
        return (self.p80 - self.p20) / self.p50 if self.p50 > 0 else math.inf


@dataclass(frozen=True)
class Row:
    """One measurement of one operator at one dtype and shape.

    ``latency`` is the candidate (FlagGems) latency and ``latency_base`` the baseline (torch)
    latency, both in milliseconds; either may be ``None`` when that side was not measured.
    ``timer`` is the timer that produced ``latency`` and ``timer_base`` the one that produced
    ``latency_base`` (``None`` in rows written before it was recorded, and in rows without a
    baseline); ``fallback`` and ``fallback_base`` say why a graph timer fell back to the direct
    one for that measurement. A speedup between latencies of unlike timers is never computed
    (:attr:`unlike_timers` says why).
    """

    op: str
    dtype: str
    shape: str
    latency: float | None
    latency_base: float | None = None
    timer: str = "direct"
    fallback: str | None = None
    spread: Spread | None = None
    spread_base: Spread | None = None
    node: str = ""
    card: str = ""
    status: str = "ok"
    error: str | None = None
    timer_base: str | None = None
    fallback_base: str | None = None
    #: in a screen's side worker timed in lockstep with the other side: ``paired`` when every
    #: measurement of the row took its turns with the other side's, ``unpaired`` when one was
    #: timed alone (the other side did not reach it); ``None`` outside lockstep
    lockstep: str | None = None
    #: the size detail as FlagGems gives it (``metric.shape_detail``: tensor sizes as lists of
    #: ints), ``None`` when the row's test gave only text; :attr:`shape` is its text, the key
    #: rows pair by
    shape_detail: Any = None
    tflops: float | None = None  # FlagGems' ``metric.tflops`` of the candidate, when it has one

    @property
    def unlike_timers(self) -> str | None:
        """Why this row's two latencies cannot be compared, or ``None`` when they can: a graph
        timing (warm, back to back) and a direct one (L2 flushed before each repetition)
        measure different things."""
        if self.latency is None or self.latency_base is None or self.timer_base is None:
            return None
        if self.timer_base == self.timer:
            return None
        return f"latency timed {self.timer}, latency_base {self.timer_base}: no speedup"

    @property
    def speedup(self) -> float | None:
        if self.unlike_timers is not None:
            return None
        if self.latency and self.latency_base and self.latency > 0 and self.latency_base > 0:
            return self.latency_base / self.latency
        return None

    @property
    def unsteady(self) -> tuple[str, ...]:
        """The latencies (``latency``, ``latency_base``) whose samples spread more than their
        timer's :data:`UNSTEADY_SPREAD` within this measurement."""
        out = []
        for name, sp, timer in (
            ("latency", self.spread, self.timer),
            ("latency_base", self.spread_base, self.timer_base or self.timer),
        ):
            limit = UNSTEADY_SPREAD.get(timer)
            if sp is not None and sp.p50 > 0 and limit is not None and sp.rel > limit:
                out.append(name)
        return tuple(out)

    @property
    def usable(self) -> bool:
        """True when the candidate latency is a finite positive number from a successful row."""
        return self.status == "ok" and is_positive_latency(self.latency)

    def to_json(self) -> dict[str, Any]:
        """The row in ``rows.jsonl``: units in the names (``latency_ms``), ``shape`` as the
        list FlagGems gives (``null`` when unknown) beside its text ``shape_text``, no NaN or
        infinity (``null``). :meth:`from_json` reads this and the names written before."""
        data: dict[str, Any] = {
            "op": self.op,
            "dtype": self.dtype,
            "shape": json_safe(self.shape_detail),
            "shape_text": self.shape,
            "latency_ms": _finite(self.latency),
            "latency_base_ms": _finite(self.latency_base),
            "tflops": _finite(self.tflops),
            "timer": self.timer,
            "fallback": self.fallback,
        }
        for key, sp in (("spread", self.spread), ("spread_base", self.spread_base)):
            if sp is not None:
                quantiles = {f"{q}_ms": _finite(getattr(sp, q)) for q in ("p20", "p50", "p80")}
                data[key] = {**quantiles, "n": sp.n}
                if sp.calls is not None:
                    data[key]["calls"] = sp.calls
        data.update(node=self.node, card=self.card, status=self.status, error=self.error)
        if self.timer_base is not None:
            data["timer_base"] = self.timer_base
        if self.fallback_base is not None:
            data["fallback_base"] = self.fallback_base
        if self.lockstep is not None:
            data["lockstep"] = self.lockstep
        if self.unsteady:  # derived: recomputed on reading
            data["unsteady"] = list(self.unsteady)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        if not isinstance(data, Mapping):
            raise RecordError(f"row is not a JSON object: {data!r:.60}")
        data = _renamed(data)
        known = {f.name for f in fields(cls)}
        missing = [k for k in ("op", "dtype", "shape", "latency") if k not in data]
        if missing:
            raise RecordError(f"row lacks {', '.join(missing)}")
        kwargs = {k: v for k, v in data.items() if k in known}
        for key in ("spread", "spread_base"):
            if kwargs.get(key) is not None:
                keys = {f.name for f in fields(Spread)}  # a later version's keys left out
                try:
                    kwargs[key] = Spread(**{k: v for k, v in kwargs[key].items() if k in keys})
                except (TypeError, AttributeError) as exc:
                    raise RecordError(f"row {key} is malformed: {exc}") from None
        for key in ("latency", "latency_base", "tflops"):
            value = kwargs.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise RecordError(f"row {key} is not a number: {value!r:.40}")
        for key in ("op", "dtype", "shape"):
            if not isinstance(kwargs[key], str):
                raise RecordError(f"row {key} is not a string: {kwargs[key]!r:.40}")
        return cls(**kwargs)


#: :attr:`Row.lockstep` of a row whose measurements all took their turns with the other side's,
#: and of a row with one that was timed alone
PAIRED, UNPAIRED = "paired", "unpaired"


def row_lockstep(*measurements: str | None) -> str | None:
    """A row's :attr:`Row.lockstep` from its measurements' (latency, baseline): ``paired`` when
    every one that took lockstep turns was paired, ``unpaired`` when one was not, ``None`` when
    none took lockstep turns."""
    taken = [m for m in measurements if m is not None]
    if not taken:
        return None
    return PAIRED if all(m == PAIRED for m in taken) else UNPAIRED


#: the names ``rows.jsonl`` used before units were in them, and what they are now
_OLD_NAMES = {"latency_ms": "latency", "latency_base_ms": "latency_base"}
_OLD_SPREAD = {"p20_ms": "p20", "p50_ms": "p50", "p80_ms": "p80"}


def _renamed(data: Mapping[str, Any]) -> dict[str, Any]:
    """A row as written now (``latency_ms``, ``shape`` list + ``shape_text``) in the names of
    :class:`Row`; a row written before passes unchanged."""
    out = dict(data)
    for new, old in _OLD_NAMES.items():
        if new in out:
            out[old] = out.pop(new)
    if "shape_text" in out:
        out["shape_detail"] = out.get("shape")
        out["shape"] = out.pop("shape_text")
    for key in ("spread", "spread_base"):
        sp = out.get(key)
        if isinstance(sp, Mapping):
            out[key] = {_OLD_SPREAD.get(k, k): v for k, v in sp.items()}
    for key in ("spread", "spread_base"):
        sp = out.get(key)
        quantiles = ("p20", "p50", "p80")
        if isinstance(sp, dict) and any(q in sp and sp[q] is None for q in quantiles):
            out[key] = None  # a spread with a non-finite value written as null: unknown
    return out


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def json_safe(value: Any) -> Any:
    """``value`` for a JSON file: NaN and infinity become ``null`` (JSON has neither), tuples
    (``torch.Size`` among them) lists, and any other object its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return str(value)


def is_positive_latency(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class RunIdentity:
    """What a run was: the seven caliber fields, the autotune mode, and informational fields."""

    backend: str
    device: str
    timer: str
    bench_level: str
    shape_mode: str
    tuner_cache: str
    direct_repeat: str
    autotune_mode: str = "off"
    info: Mapping[str, Any] = field(default_factory=dict)

    def caliber(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in CALIBER_FIELDS}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.caliber()
        data["autotune_mode"] = self.autotune_mode
        for key, value in self.info.items():
            if key not in data:
                data[key] = value
        data.setdefault("schema", SCHEMA)
        return data

    @classmethod
    def from_json(cls, data: Any, source: str = "run_identity.json") -> RunIdentity:
        if not isinstance(data, Mapping):
            raise RecordError(f"{source}: not a JSON object")
        missing = [k for k in (*CALIBER_FIELDS, "autotune_mode") if k not in data]
        if missing:
            raise RecordError(f"{source}: missing field(s) {', '.join(missing)}")
        values = {}
        for key in (*CALIBER_FIELDS, "autotune_mode"):
            value = data[key]
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise RecordError(f"{source}: field {key} is not a string: {value!r:.40}")
            values[key] = str(value)
        if values["bench_level"] == _OLD_NO_LEVEL:
            values["bench_level"] = NO_LEVEL
        if values["autotune_mode"] not in AUTOTUNE_MODES:
            raise RecordError(
                f"{source}: autotune_mode {values['autotune_mode']!r} is not one of "
                f"{', '.join(AUTOTUNE_MODES)}"
            )
        info = {k: v for k, v in data.items() if k not in values}
        return cls(info=info, **values)

    def replace(self, **changes: Any) -> RunIdentity:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(changes)
        return RunIdentity(**data)


# --------------------------------------------------------------------------------------------
# Files


def umask() -> int:
    """The process's file mode creation mask, read without changing it (``/proc``), or, where
    that is not readable, by setting it and back."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` so that readers see either the old file or the whole new one.
    An ``OSError`` (a full disk, a read-only file system) names ``path``, never the temporary
    file or none (a failed write names no file)."""
    target = Path(path)
    try:
        _write_atomic(target, text)
    except OSError as exc:
        if exc.filename == str(target) or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc


def _write_atomic(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~umask())  # as open() would create it (mkstemp makes it 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def json_text(data: Any) -> str:
    """``data`` as :func:`write_json` writes it."""
    return json.dumps(json_safe(data), indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as JSON atomically; NaN and infinity are written as ``null``."""
    write_atomic(path, json_text(data))


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``; ``None`` when it is missing, unreadable or not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_identity(run_dir: str | os.PathLike[str]) -> RunIdentity:
    path = Path(run_dir) / IDENTITY_FILE
    if not path.is_file():
        raise RecordError(f"{path}: missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None
    return RunIdentity.from_json(data, source=str(path))


def write_identity(run_dir: str | os.PathLike[str], identity: RunIdentity) -> None:
    write_json(Path(run_dir) / IDENTITY_FILE, identity.to_json())


def rows_to_jsonl(rows: Iterable[Row]) -> str:
    return "".join(json.dumps(r.to_json(), allow_nan=False) + "\n" for r in rows)


def iter_rows_jsonl(text: str, source: str = ROWS_FILE) -> Iterator[Row]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{source}:{lineno}: not JSON ({exc.msg})") from None
        try:
            yield Row.from_json(data)
        except RecordError as exc:
            raise RecordError(f"{source}:{lineno}: {exc}") from None


def read_rows(run_dir: str | os.PathLike[str]) -> list[Row]:
    path = Path(run_dir) / ROWS_FILE
    if not path.is_file():
        raise RecordError(f"{path}: missing")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: unreadable ({exc})") from None
    return list(iter_rows_jsonl(text, source=str(path)))


def partial_file(run_dir: str | os.PathLike[str], worker: str | None = None) -> Path:
    """The partial-rows file of one measuring process (``worker``: an xdist worker's id)."""
    name = PARTIAL_ROWS_FILE if worker is None else f"rows.partial.{worker}.jsonl"
    return Path(run_dir) / name


def partial_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    return sorted(Path(run_dir).glob("rows.partial*.jsonl"))


def partial_rows(run_dir: str | os.PathLike[str]) -> tuple[str, int] | None:
    """The partial-rows files of a killed or interrupted run, named for a message (``a, b``),
    and how many rows they hold (lines, a cut-off last one too); ``None`` when there are
    none."""
    files = partial_files(run_dir)
    if not files:
        return None
    count = 0
    for path in files:
        try:
            count += sum(1 for line in path.read_bytes().splitlines() if line.strip())
        except OSError:
            continue
    return ", ".join(p.name for p in files), count


def is_complete(run_dir: str | os.PathLike[str]) -> bool:
    return (Path(run_dir) / COMPLETE_FILE).is_file()
