import pytest

from cart.pricing import line_total, with_tax


def test_small_orders_pay_full_price():
    assert line_total(250, 3) == 750


def test_bulk_discount_starts_at_ten_items():
    # 10 items at 2.00 each: 20.00, minus 10 % -> 18.00
    assert line_total(200, 10) == 1800


def test_bulk_discount_applies_above_ten_items():
    assert line_total(100, 20) == 1800


def test_negative_quantities_are_refused():
    with pytest.raises(ValueError):
        line_total(100, -1)


def test_tax_is_rounded_to_the_cent():
    assert with_tax(999, 0.08) == 1079
