"""Purchases, generated in batches: pure and deterministic per (seed, instance).

A batch is drawn with numpy and turned into JSON text by pasting precomputed pieces, because
formatting each record field by field in Python would cost more than producing it to Kafka.
The batch size is fixed, so the n-th purchase of a stream never depends on how many are taken.

Event time comes from one of two clocks. The accelerated clock (DailyClock) is simulated: a Poisson
process whose intensity follows a daily curve (quiet at night, peaks at lunch and in the early
evening), sampled exactly by time rescaling over minute bins, independent of how fast the records
are sent. The wall clock (WallClock) stamps each record with the time it is due to be sent; it is
the one impure part, and reads the time through a function it is given. Both draw the same random
numbers, so a seed gives the same purchases under either clock; only their times differ.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from failsafe.workloads.sales.catalogue import PRODUCTS, Product

BATCH_SIZE = 4096
SUPPLEMENT_PRICE = Decimal("1.99")
MEMBER_DISCOUNT = Decimal("0.10")
MEMBER_SHARE = 0.35
SUPPLEMENT_SHARE = 0.25
QUANTITY_WEIGHTS = (0.70, 0.20, 0.10)  # quantities 1, 2, 3
ZIPF_EXPONENT = 1.1
PEAK_PER_S = 2.0  # purchases per simulated second of one instance in the busiest minute of the day
MAX_INSTANCES = 99  # two digits in the ledger's file names
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

# SeedSequence entropy starts with a tag, so no two streams share a seed by accident.
_PURCHASES_TAG, _POPULARITY_TAG, _IDS_TAG = 0x5A1E5, 0x9091A, 0x1D5
_MASK63 = (1 << 63) - 1
_SEQ_BITS = 47  # room for 1.4e14 purchases per instance; the instance goes above
_MINUTES_PER_DAY = 1440
_DAY_US = 86_400_000_000


def total_purchase(price: Decimal, supplement_price: Decimal, quantity: int, member_discount: Decimal) -> Decimal:
    """The contract's total: half-up to cents, in Decimal so 7.18 never comes out as 7.17."""
    return ((price + supplement_price) * quantity * (1 - member_discount)).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )


def _number(value: Decimal) -> str:
    # Python's json.dumps of the seed simulator's floats: 9.9 not 9.90, 0.0 not 0.
    return repr(float(value))


def _raw_curve(hour: np.ndarray) -> np.ndarray:
    open_hours = 1 / (1 + np.exp(-(hour - 7.5) * 2.5)) / (1 + np.exp((hour - 21.5) * 2.0))
    lunch = np.exp(-0.5 * ((hour - 12.5) / 0.9) ** 2)
    evening = np.exp(-0.5 * ((hour - 18.0) / 1.2) ** 2)
    return 0.03 + 0.25 * open_hours + 0.75 * lunch + 0.55 * evening


_CURVE_PEAK = float(_raw_curve(np.linspace(0, 24, 24 * 600 + 1)).max())


def daily_curve(hour: np.ndarray) -> np.ndarray:
    """Relative purchase intensity at an hour of the day (UTC): about 0.03 at night, 1.0 at the lunch peak
    (12:30), a second peak around 18:00."""
    return _raw_curve(hour) / _CURVE_PEAK


def popularity(seed: int, products: tuple[Product, ...] = PRODUCTS) -> np.ndarray:
    """Zipf-like purchase probabilities per product; which product is the favourite depends on the seed only,
    so every instance of a run agrees on it."""
    ranks = np.random.default_rng([_POPULARITY_TAG, seed]).permutation(len(products)) + 1
    weights = ranks.astype(np.float64) ** -ZIPF_EXPONENT
    return weights / weights.sum()


_MIX = ((31, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB))
_FINAL_SHIFT = 31


def _id_key(seed: int) -> np.uint64:
    return np.uint64(int(np.random.SeedSequence([_IDS_TAG, seed]).generate_state(1, np.uint64)[0]) & _MASK63)


def transaction_ids(seed: int, instance: int, seqs: np.ndarray) -> np.ndarray:
    """63-bit ids from a seed-keyed bijection of (instance, seq): unique within a run, random-looking like the
    seed's."""
    mask = np.uint64(_MASK63)
    x = (np.uint64(instance) << np.uint64(_SEQ_BITS)) | seqs.astype(np.uint64)
    # Each step is a bijection on [0, 2**63): xor with a key, xorshift, multiplication by an odd constant.
    x = x ^ _id_key(seed)
    for shift, mult in _MIX:
        x = x ^ (x >> np.uint64(shift))
        x = (x * np.uint64(mult)) & mask
    return x ^ (x >> np.uint64(_FINAL_SHIFT))


def _unshift(y: np.ndarray, shift: int) -> np.ndarray:
    x = y
    for _ in range(63 // shift + 1):
        x = y ^ (x >> np.uint64(shift))
    return x


def sequences_of(seed: int, instance: int, ids: np.ndarray) -> np.ndarray:
    """The inverse of ``transaction_ids``: which of the instance's records each id is (ValueError for another's)."""
    mask = np.uint64(_MASK63)
    x = _unshift(ids.astype(np.uint64), _FINAL_SHIFT)
    for shift, mult in reversed(_MIX):
        x = (x * np.uint64(pow(mult, -1, 2**63))) & mask
        x = _unshift(x, shift)
    x = x ^ _id_key(seed)
    if (x >> np.uint64(_SEQ_BITS) != np.uint64(instance)).any():
        raise ValueError(f"transaction ids of another instance than {instance}")
    return (x & np.uint64((1 << _SEQ_BITS) - 1)).astype(np.int64)


# Where the transaction id starts in every purchase's JSON: the time before it has a fixed width.
ID_AT = len('{"transaction_time": "') + len("2024-08-25 13:22:16.794118") + len('", "transaction_id": "')


class DailyClock:
    """Event times of one instance, starting at ``start_us`` (UTC microseconds since the epoch)."""

    def __init__(self, start_us: int, peak_per_s: float = PEAK_PER_S) -> None:
        minutes = np.arange(_MINUTES_PER_DAY, dtype=np.float64)
        self._per_minute = daily_curve((minutes + 0.5) / 60) * peak_per_s * 60  # expected purchases in each minute
        self._cum = np.concatenate(([0.0], np.cumsum(self._per_minute)))
        self.per_day = float(self._cum[-1])
        self._day, offset_us = divmod(start_us, _DAY_US)
        minute, us = divmod(offset_us, 60_000_000)
        # Position in "expected purchases since midnight" units; whole days are carried apart to keep floats small.
        self._level = float(self._cum[minute] + self._per_minute[minute] * us / 60_000_000)
        self._last_us = start_us

    def advance(self, unit_gaps: np.ndarray) -> np.ndarray:
        """The times of the next purchases, given Exp(1) gaps in rescaled time."""
        levels = self._level + np.cumsum(unit_gaps)
        days = np.floor(levels / self.per_day)
        rem = levels - days * self.per_day
        minute = np.clip(np.searchsorted(self._cum, rem, side="right") - 1, 0, _MINUTES_PER_DAY - 1)
        within_s = np.clip((rem - self._cum[minute]) / self._per_minute[minute], 0.0, 1.0) * 60
        us = (
            (self._day + days.astype(np.int64)) * _DAY_US
            + minute * 60_000_000
            + np.floor(within_s * 1e6).astype(np.int64)
        )
        self._day += int(days[-1])
        self._level = float(rem[-1])
        # Float rounding at a minute's edge could step back a microsecond: an instance's clock never goes back.
        us = np.maximum.accumulate(np.maximum(us, self._last_us))
        self._last_us = int(us[-1])
        return us


# Event-time clocks (docs/simulator.md): 'accelerated' runs a shopping day on DailyClock, far faster than the wall
# clock at high rates; 'wall' stamps each purchase with the time it is due to be sent.
ACCELERATED, WALL, AUTO = "accelerated", "wall", "auto"
CLOCKS = (AUTO, WALL, ACCELERATED)


def wall_now_us() -> int:
    return time.time_ns() // 1000


class WallClock:
    """Event time = send time. At a fixed rate, record k of the instance is due at first_batch + k/rate (the
    pacing's own schedule, so a record held back by a failover keeps the time its purchase happened); as fast
    as possible, every record of a batch gets the time the batch is made."""

    def __init__(self, rate_per_s: float, now_us: Callable[[], int] = wall_now_us) -> None:
        self.rate_per_s = rate_per_s
        self._now_us = now_us
        self._start_us: int | None = None
        self._issued = 0
        self._last_us = 0

    def advance(self, unit_gaps: np.ndarray) -> np.ndarray:
        """The times of the next ``len(unit_gaps)`` records (the gaps are drawn anyway, so both clocks give the same
        purchases)."""
        n = len(unit_gaps)
        if self.rate_per_s > 0:
            if self._start_us is None:
                self._start_us = self._now_us()
            k = np.arange(self._issued, self._issued + n, dtype=np.int64)
            us = self._start_us + np.floor(k * (1e6 / self.rate_per_s)).astype(np.int64)
        else:
            us = np.full(n, self._now_us(), dtype=np.int64)
        us = np.maximum.accumulate(np.maximum(us, self._last_us))
        self._issued += n
        self._last_us = int(us[-1])
        return us


@dataclass
class PurchaseBatch:
    """Records ``first_seq`` .. ``first_seq + len - 1`` of one instance; ``malformed`` marks the broken ones."""

    first_seq: int
    transaction_id: np.ndarray  # uint64
    time_us: np.ndarray  # int64, UTC microseconds since the epoch
    product: np.ndarray  # int16 index into the catalogue
    quantity: np.ndarray  # int8
    is_member: np.ndarray  # bool
    supplements: np.ndarray  # bool
    malformed: np.ndarray  # bool
    total_cents: np.ndarray  # int64
    values: list[str]
    keys: list[str]

    def __len__(self) -> int:
        return len(self.values)


class _Formats:
    """Every combination of product, quantity, membership and supplements as ready JSON text."""

    def __init__(self, products: tuple[Product, ...]) -> None:
        self.tails: list[str] = []
        self.cents: list[int] = []
        for p in products:
            for quantity in (1, 2, 3):
                for member in (False, True):
                    for supplements in (False, True):
                        discount = MEMBER_DISCOUNT if member else Decimal("0.0")
                        supplement = SUPPLEMENT_PRICE if supplements else Decimal("0.0")
                        total = total_purchase(p.price, supplement, quantity, discount)
                        self.tails.append(
                            f'"product_id": "{p.product_id}", "price": {_number(p.price)}, "quantity": {quantity}, '
                            f'"is_member": {"true" if member else "false"}, "member_discount": {_number(discount)}, '
                            f'"add_supplements": {"true" if supplements else "false"}, "supplement_price": '
                            f"{_number(supplement)}, "
                            f'"total_purchase": {_number(total)}}}'
                        )
                        self.cents.append(int(total * 100))
        self.hms = [f"{h:02d}:{m:02d}:{s:02d}." for h in range(24) for m in range(60) for s in range(60)]
        self.three = [f"{i:03d}" for i in range(1000)]
        self.dates: dict[int, str] = {}

    def date(self, day: int) -> str:
        text = self.dates.get(day)
        if text is None:
            text = self.dates[day] = (dt.date(1970, 1, 1) + dt.timedelta(days=day)).isoformat()
        return text


def combo(product: np.ndarray, quantity: np.ndarray, is_member: np.ndarray, supplements: np.ndarray) -> np.ndarray:
    """Index into the precomputed formats and totals."""
    return ((product.astype(np.int32) * 3 + (quantity.astype(np.int32) - 1)) * 2 + is_member) * 2 + supplements


def malformed_value(value: str, seq: int) -> str:
    """A deliberately broken record: cut mid-way, or not JSON at all (alternating, so both kinds appear)."""
    if seq % 2 == 0:
        return value[: len(value) // 2]
    return "purchase " + value.replace('"', "").replace(", ", ";").strip("{}")


class PurchaseStream:
    """The purchases of one instance, batch by batch."""

    def __init__(
        self,
        seed: int,
        instance: int,
        start_us: int,
        malformed_every: int = 0,
        products: tuple[Product, ...] = PRODUCTS,
        clock: DailyClock | WallClock | None = None,
    ) -> None:
        if not 0 <= instance < MAX_INSTANCES:
            raise ValueError(f"instance {instance} out of range 0-{MAX_INSTANCES - 1}")
        self.seed, self.instance, self.malformed_every = seed, instance, malformed_every
        self.products = products
        self._rng = np.random.default_rng([_PURCHASES_TAG, seed, instance])
        self._clock = clock if clock is not None else DailyClock(start_us)
        self._popularity = popularity(seed, products)
        self._formats = _Formats(products)
        self.cents_by_combo = np.array(self._formats.cents, dtype=np.int64)
        self._keys_by_combo = [p.product_id for p in products for _ in range(12)]
        self.product_ids = [p.product_id for p in products]
        self._next_seq = 0

    def next_batch(self) -> PurchaseBatch:
        n, rng, f = BATCH_SIZE, self._rng, self._formats
        seqs = np.arange(self._next_seq, self._next_seq + n, dtype=np.int64)
        # One fixed order of draws per batch: changing it changes every stream.
        time_us = self._clock.advance(rng.exponential(1.0, n))
        product = rng.choice(len(self.products), size=n, p=self._popularity).astype(np.int16)
        quantity = (rng.choice(3, size=n, p=QUANTITY_WEIGHTS) + 1).astype(np.int8)
        is_member = rng.random(n) < MEMBER_SHARE
        supplements = rng.random(n) < SUPPLEMENT_SHARE
        tids = transaction_ids(self.seed, self.instance, seqs)
        combo_index = combo(product, quantity, is_member, supplements)
        combos = combo_index.tolist()

        seconds, micros = np.divmod(time_us, 1_000_000)
        days, second_of_day = np.divmod(seconds, 86_400)
        hi, lo = np.divmod(micros, 1000)
        hms, three, tails = f.hms, f.three, f.tails
        if days[0] == days[-1]:
            date = f.date(int(days[0]))
            values = [
                f'{{"transaction_time": "{date} {hms[s]}{three[h]}{three[m]}", "transaction_id": "{i}", {tails[c]}'
                for s, h, m, i, c in zip(
                    second_of_day.tolist(), hi.tolist(), lo.tolist(), tids.tolist(), combos, strict=True
                )
            ]
        else:  # a batch across midnight
            values = [
                f'{{"transaction_time": "{f.date(d)} {hms[s]}{three[h]}{three[m]}", "transaction_id": "{i}", {tails[c]}'
                for d, s, h, m, i, c in zip(
                    days.tolist(), second_of_day.tolist(), hi.tolist(), lo.tolist(), tids.tolist(), combos, strict=True
                )
            ]
        malformed = np.zeros(n, dtype=bool)
        if self.malformed_every:
            malformed = (seqs + 1) % self.malformed_every == 0
            for j in np.flatnonzero(malformed).tolist():
                values[j] = malformed_value(values[j], self._next_seq + j)
        batch = PurchaseBatch(
            self._next_seq,
            tids,
            time_us,
            product,
            quantity,
            is_member,
            supplements,
            malformed,
            self.cents_by_combo[combo_index],
            values,
            [self._keys_by_combo[c] for c in combos],
        )
        self._next_seq += n
        return batch


def share(total: int, instances: int, instance: int) -> int:
    """Instance ``instance``'s part of ``total`` purchases: the first ones take one more when it does not divide."""
    return total // instances + (1 if instance < total % instances else 0)


def records_for(purchases: int, malformed_every: int) -> int:
    """How many records carry ``purchases`` valid purchases when every ``malformed_every``-th record is broken."""
    if not malformed_every or purchases == 0:
        return purchases
    return purchases + (purchases - 1) // (malformed_every - 1)


def parse_time(text: str) -> int:
    """'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC) as microseconds since the epoch; ValueError when it is not that."""
    for fmt in ("%Y-%m-%d %H:%M:%S", TIME_FORMAT, "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f"):
        try:
            moment = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return to_us(moment)
    raise ValueError(text)


def to_us(moment: dt.datetime) -> int:
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    delta = moment - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def format_us(time_us: int) -> str:
    return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=time_us)).strftime(TIME_FORMAT)


def purchase_values(seed: int, instance: int, start_us: int, count: int, malformed_every: int = 0) -> list[str]:
    """The first ``count`` record values of an instance (what the simulator sends, in order)."""
    stream = PurchaseStream(seed, instance, start_us, malformed_every)
    out: list[str] = []
    while len(out) < count:
        out.extend(stream.next_batch().values)
    return out[:count]
