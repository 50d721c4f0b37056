package cart

import "testing"

func TestTotalWithDiscount(t *testing.T) {
	c := &Cart{Discount: "HALFOFF"}
	c.AddItem("apple", 2, 100)
	if got, _ := c.Total(); got != 100 {
		t.Fatalf("total = %d", got)
	}
}
