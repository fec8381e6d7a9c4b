"""Stock levels of one instance's store, and the restock events they cause (``demo.inventories``).

Every purchase takes its quantity off the shelf; when a product's level falls to the reorder
level or below, it is restocked at once and a restock event is published. Batches are handled
with numpy in closed form: a restock adds more than one purchase can take, so after every
purchase the level is back above the reorder level, and the number of restocks after ``sold``
units is ``floor((sold - (initial - reorder)) / restock) + 1`` once ``sold`` reaches
``initial - reorder``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from failsafe.workloads.sales.generator import format_us

INITIAL_LEVEL = 60
REORDER_LEVEL = 10
RESTOCK_QUANTITY = 50
MAX_QUANTITY = 3  # the most units one purchase takes


@dataclass(frozen=True)
class Restock:
    event_time_us: int
    product_id: str
    existing_level: int
    stock_quantity: int
    new_level: int

    def to_json(self) -> str:
        return (
            f'{{"event_time": "{format_us(self.event_time_us)}", "product_id": "{self.product_id}", '
            f'"existing_level": {self.existing_level}, "stock_quantity": {self.stock_quantity}, "new_level": '
            f"{self.new_level}}}"
        )


class Inventory:
    def __init__(
        self,
        product_ids: list[str],
        initial_level: int = INITIAL_LEVEL,
        reorder_level: int = REORDER_LEVEL,
        restock_quantity: int = RESTOCK_QUANTITY,
    ) -> None:
        if restock_quantity < MAX_QUANTITY or initial_level <= reorder_level:
            raise ValueError(
                "a restock must cover the largest purchase and the initial level be above the reorder level"
            )
        self.product_ids = product_ids
        self.initial_level, self.reorder_level, self.restock_quantity = initial_level, reorder_level, restock_quantity
        self._sold = np.zeros(len(product_ids), dtype=np.int64)
        self._restocks = np.zeros(len(product_ids), dtype=np.int64)

    def opening(self, time_us: int) -> list[Restock]:
        """The first delivery of every product, so a reader of the topic knows every level from the start."""
        return [Restock(time_us, pid, 0, self.initial_level, self.initial_level) for pid in self.product_ids]

    def levels(self) -> dict[str, int]:
        level = self.initial_level - self._sold + self.restock_quantity * self._restocks
        return dict(zip(self.product_ids, level.tolist(), strict=True))

    def _restocks_after(self, sold: np.ndarray) -> np.ndarray:
        over = sold - (self.initial_level - self.reorder_level)
        return np.where(over >= 0, over // self.restock_quantity + 1, 0)

    def sell(self, product: np.ndarray, quantity: np.ndarray, time_us: np.ndarray) -> list[tuple[int, Restock]]:
        """Take a batch of purchases off the shelves (quantity 0 for records that are no purchase); the restocks in
        order, each with the position in the batch of the purchase that caused it."""
        found: list[tuple[int, int, int]] = []  # (position in the batch, product, restocks before)
        sold_after = np.empty(len(product), dtype=np.int64)
        for p in np.unique(product).tolist():
            at = np.flatnonzero(product == p)
            sold = self._sold[p] + np.cumsum(quantity[at], dtype=np.int64)
            restocks = self._restocks_after(sold)
            before = np.concatenate(([self._restocks[p]], restocks[:-1]))
            for j in np.flatnonzero(restocks > before).tolist():
                found.append((int(at[j]), p, int(before[j])))
            sold_after[at] = sold
            self._sold[p] = sold[-1]
            self._restocks[p] = restocks[-1]
        out = []
        for position, p, before in sorted(found):
            existing = self.initial_level - int(sold_after[position]) + self.restock_quantity * before
            restock = Restock(
                int(time_us[position]),
                self.product_ids[p],
                existing,
                self.restock_quantity,
                existing + self.restock_quantity,
            )
            out.append((position, restock))
        return out
