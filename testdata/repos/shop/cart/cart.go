// Package cart holds a shopping cart and computes its total.
package cart

import "errors"

// ErrEmpty is returned when checking out an empty cart.
var ErrEmpty = errors.New("cart is empty")

// Item is one line of a cart.
type Item struct {
	SKU      string
	Quantity int
	Cents    int64
}

// Cart is a list of items with an optional discount code.
type Cart struct {
	Items    []Item
	Discount string
}

// AddItem adds quantity of sku at a unit price in cents.
func (c *Cart) AddItem(sku string, quantity int, cents int64) {
	c.Items = append(c.Items, Item{SKU: sku, Quantity: quantity, Cents: cents})
}

// Total returns the cart's total in cents after the discount.
func (c *Cart) Total() (int64, error) {
	if len(c.Items) == 0 {
		return 0, ErrEmpty
	}
	var sum int64
	for _, it := range c.Items {
		sum += int64(it.Quantity) * it.Cents
	}
	return applyDiscount(sum, c.Discount), nil
}

// applyDiscount takes a percentage off for known discount codes.
func applyDiscount(cents int64, code string) int64 {
	switch code {
	case "WELCOME10":
		return cents * 90 / 100
	case "HALFOFF":
		return cents / 2
	}
	return cents
}
