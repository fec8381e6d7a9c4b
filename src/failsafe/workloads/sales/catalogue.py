"""The smoothie bar's product catalogue, in the shape of seed 003's sales simulator.

Ids, categories and prices follow the seed (CS09 at 4.99, IS02 at 5.49, SF05 and SC01 at 5.99);
the names, sizes and costs of goods are our own.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import orjson

CATEGORIES = {
    "CS": "Classic Smoothies",
    "SF": "Superfoods Smoothies",
    "SC": "Supercharged Smoothies",
    "IS": "Indulgent Smoothies",
}
PRICES = {"CS": Decimal("4.99"), "IS": Decimal("5.49"), "SF": Decimal("5.99"), "SC": Decimal("5.99")}
SIZE = "24 oz"


@dataclass(frozen=True)
class Product:
    product_id: str
    category: str
    name: str
    size: str
    price: Decimal
    cogs: Decimal

    def to_json(self) -> bytes:
        """The value published to demo.products (field order of the contract)."""
        return orjson.dumps(
            {
                "product_id": self.product_id,
                "category": self.category,
                "name": self.name,
                "size": self.size,
                "price": float(self.price),
                "cogs": float(self.cogs),
            }
        )


_NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "CS": (
        ("Strawberry Sunrise", "1.35"),
        ("Banana Boat", "1.20"),
        ("Mango Tango", "1.45"),
        ("Blueberry Breeze", "1.50"),
        ("Peach Porch", "1.30"),
        ("Pineapple Pier", "1.40"),
        ("Raspberry Ripple", "1.55"),
        ("Orange Orchard", "1.25"),
        ("Cherry Cove", "1.60"),
        ("Kiwi Kick", "1.45"),
    ),
    "SF": (
        ("Kale Cloud", "1.90"),
        ("Spirulina Surf", "2.10"),
        ("Acai Afterglow", "2.25"),
        ("Matcha Meadow", "2.05"),
        ("Beet Boulevard", "1.75"),
        ("Chia Chorus", "1.95"),
        ("Golden Turmeric", "1.85"),
    ),
    "SC": (
        ("Protein Powerhouse", "2.30"),
        ("Espresso Engine", "2.15"),
        ("Ginger Jolt", "1.95"),
        ("Maca Marathon", "2.40"),
        ("Collagen Crest", "2.55"),
    ),
    "IS": (
        ("Peanut Butter Cup", "1.80"),
        ("Cookie Crumble", "1.70"),
        ("Salted Caramel Swirl", "1.75"),
        ("Mocha Midnight", "1.85"),
        ("Coconut Cream Dream", "1.65"),
    ),
}

PRODUCTS: tuple[Product, ...] = tuple(
    Product(f"{prefix}{n:02d}", CATEGORIES[prefix], name, SIZE, PRICES[prefix], Decimal(cogs))
    for prefix, names in _NAMES.items()
    for n, (name, cogs) in enumerate(names, start=1)
)


def product(product_id: str) -> Product:
    for p in PRODUCTS:
        if p.product_id == product_id:
            return p
    raise KeyError(product_id)
