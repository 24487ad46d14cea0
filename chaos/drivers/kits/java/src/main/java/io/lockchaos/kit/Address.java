package io.lockchaos.kit;

/** A Redis or Sentinel address from the hello: always one of this client's proxies. */
public record Address(String host, int port) {
    @Override
    public String toString() {
        return host + ":" + port;
    }
}
