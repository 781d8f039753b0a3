package whatsapp_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

func Example() {
	t := pacer.New(nil, whatsapp.Preset(whatsapp.High))
	if err := t.Err(); err != nil {
		panic(err)
	}
	_ = t.Client()
	fmt.Println(whatsapp.Standard.Limit(), whatsapp.High.Limit(), whatsapp.Coexistence.Limit(), whatsapp.PairLimit())
	// Output: 80/1s 1000/1s 20/1s 1/6s
}
