package whatsapp_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

func Example() {
	// Preset takes WhatsApp's own settings only (the throughput level), as
	// every provider's does; pacer's options go to pacer.New beside it,
	// and one given after the preset wins: here the level less 100 inbound
	// messages a second, which Meta counts in the same throughput.
	reserve, err := whatsapp.High.ReserveInbound(100)
	if err != nil {
		panic(err)
	}
	t := pacer.New(nil, whatsapp.Preset(whatsapp.High), reserve)
	if err := t.Err(); err != nil {
		panic(err)
	}
	_ = t.Client()
	fmt.Println(whatsapp.Standard.Limit(), whatsapp.High.Limit(), whatsapp.Coexistence.Limit(), whatsapp.PairLimit())
	// Output: 80/1s 1000/1s 20/1s 1/6s
}
