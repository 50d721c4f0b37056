package payment

import "context"

// Refund returns money for an earlier charge.
func Refund(ctx context.Context, gw Gateway, chargeID string) error {
	_, err := gw.Charge(ctx, "refund:"+chargeID, 0)
	return err
}
