"""A tiny shopping cart: prices in cents, a bulk discount, and sales tax."""

from cart.cart import Cart
from cart.pricing import line_total

__all__ = ["Cart", "line_total"]
