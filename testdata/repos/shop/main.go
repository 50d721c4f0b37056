// Command shop is a tiny sample service used by troupe's tests.
package main

import (
	"fmt"
	"os"

	"example.com/shop/cart"
)

func main() {
	c := &cart.Cart{Discount: os.Getenv("SHOP_DISCOUNT")}
	c.AddItem("book", 1, 1999)
	total, err := c.Total()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("total: %d cents\n", total)
}
