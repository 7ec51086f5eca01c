from cart import Cart


def test_an_empty_cart_costs_nothing():
    assert Cart().total() == 0


def test_adding_the_same_item_twice_adds_up():
    cart = Cart()
    cart.add("pen", 150)
    cart.add("pen", 150, 2)
    assert cart.lines["pen"] == (150, 3)
    assert cart.subtotal() == 450


def test_removing_items():
    cart = Cart()
    cart.add("pen", 150, 5)
    cart.remove("pen", 2)
    assert cart.subtotal() == 450
    cart.remove("pen", 3)
    assert cart.lines == {}


def test_total_includes_tax():
    cart = Cart(tax_rate=0.10)
    cart.add("book", 1000)
    cart.add("pen", 150, 2)
    assert cart.total() == 1430
