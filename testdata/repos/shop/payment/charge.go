// Package payment charges cards through a payment gateway.
package payment

import (
	"context"
	"errors"
	"time"
)

// Gateway is the card processor.
type Gateway interface {
	Charge(ctx context.Context, card string, cents int64) (string, error)
}

// ErrDeclined is returned when the card is declined.
var ErrDeclined = errors.New("card declined")

// ChargeWithRetry charges a card, retrying transient gateway failures with
// exponential backoff.
func ChargeWithRetry(ctx context.Context, gw Gateway, card string, cents int64) (string, error) {
	backoff := 100 * time.Millisecond
	for attempt := 0; attempt < 4; attempt++ {
		id, err := gw.Charge(ctx, card, cents)
		if err == nil || errors.Is(err, ErrDeclined) {
			return id, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
	return "", errors.New("payment gateway unavailable")
}
