module lockchaos/drivers/bsm-redislock

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	lockchaos.dev/driverkit v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// The Go driver kit, shipped next to the bundled drivers' sources (chaos/drivers/kits/go).
replace lockchaos.dev/driverkit => ../../kits/go/driverkit
