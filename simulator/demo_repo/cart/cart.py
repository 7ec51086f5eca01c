"""A cart of items: add, remove, and the total with tax."""

from __future__ import annotations

from dataclasses import dataclass, field

from cart.pricing import line_total, with_tax


@dataclass
class Cart:
    tax_rate: float = 0.0
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (unit, quantity)

    def add(self, name: str, unit_cents: int, quantity: int = 1) -> None:
        _, held = self.lines.get(name, (unit_cents, 0))
        self.lines[name] = (unit_cents, held + quantity)

    def remove(self, name: str, quantity: int = 1) -> None:
        unit, held = self.lines[name]
        if quantity >= held:
            del self.lines[name]
        else:
            self.lines[name] = (unit, held - quantity)

    def subtotal(self) -> int:
        return sum(line_total(unit, quantity) for unit, quantity in self.lines.values())

    def total(self) -> int:
        return with_tax(self.subtotal(), self.tax_rate)
