"""Prices of order lines. All amounts are integer cents, so that totals add up exactly."""

# Orders of BULK_THRESHOLD or more of one item get BULK_DISCOUNT off that line.
BULK_THRESHOLD = 10
BULK_DISCOUNT = 0.10


def line_total(unit_cents: int, quantity: int) -> int:
    """The price of `quantity` items at `unit_cents` each, after the bulk discount."""
    if unit_cents < 0 or quantity < 0:
        raise ValueError("prices and quantities cannot be negative")
    subtotal = unit_cents * quantity
    if quantity > BULK_THRESHOLD:
        subtotal -= round(subtotal * BULK_DISCOUNT)
    return subtotal


def with_tax(cents: int, rate: float) -> int:
    """`cents` plus sales tax at `rate` (0.08 for 8 %), rounded to the nearest cent."""
    return cents + round(cents * rate)
