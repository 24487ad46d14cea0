package main

import kit "lockchaos.dev/driverkit"

func main() { kit.Serve(description, open) }
