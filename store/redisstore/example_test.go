package redisstore_test

import (
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
)

// A fleet on Redis: every instance of the service builds this same
// Transport. Each is configured at the provider's full limit, and together
// they stay under it, because they take from one bucket in Redis.
//
// The example needs a Redis server, so go test compiles it but does not run
// it; internal/integration/fleettest runs a fleet of processes this way
// against a real one.
func Example_fleet() {
	rdb := redis.NewClient(&redis.Options{
		Addr: "localhost:6379",
		// Gives up at each call's deadline, so a hung Redis holds no
		// request longer than store.Policy.Timeout.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()

	transport := pacer.New(nil,
		pacer.WithLimit(pacer.PerMinute(3500)), // the provider's limit, for the whole fleet
		pacer.WithStore(redisstore.New(rdb), store.Policy{Instances: 10, Lease: 16, AdaptiveLease: true}),
	)
	if err := transport.Err(); err != nil {
		log.Fatal(err)
	}
	client := transport.Client()

	resp, err := client.Get("https://api.example.com/v1/items")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
}
