package io.lockchaos.kit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

/**
 * The harness's hello: who this client is, its key and TTL, and where to connect — every
 * address through this client's own proxies (docs/driver-protocol.md, "hello").
 */
public final class Hello {
    private final JsonObject raw;
    private final List<Address> nodes;
    private final List<Address> sentinels;
    private final Map<String, Address> route = new HashMap<>();

    Hello(JsonObject raw) {
        this.raw = raw;
        this.nodes = addresses(raw.get("nodes"));
        this.sentinels = addresses(raw.get("sentinels"));
        JsonElement routes = raw.get("route");
        if (routes != null && routes.isJsonObject()) {
            for (Map.Entry<String, JsonElement> e : routes.getAsJsonObject().entrySet()) {
                route.put(e.getKey(), address(e.getValue().getAsJsonObject()));
            }
        }
        clientId();  // the fields every lock needs: a hello without them is refused at once
        lockName();
        ttlMs();
    }

    private static Address address(JsonObject o) {
        return new Address(o.get("host").getAsString(), o.get("port").getAsInt());
    }

    private static List<Address> addresses(JsonElement list) {
        if (list == null || !list.isJsonArray()) return List.of();
        List<Address> out = new ArrayList<>();
        for (JsonElement e : list.getAsJsonArray()) out.add(address(e.getAsJsonObject()));
        return Collections.unmodifiableList(out);
    }

    private String string(String field) {
        JsonElement v = raw.get(field);
        return v == null || v.isJsonNull() ? null : v.getAsString();
    }

    private String required(String field) {
        String v = string(field);
        if (v == null) throw new IllegalArgumentException("the hello has no " + field);
        return v;
    }

    public String clientId() {
        return required("client_id");
    }

    /** The key to lock (a library may build its own key from it). */
    public String lockName() {
        return required("lock_name");
    }

    public int ttlMs() {
        return Integer.parseInt(required("ttl_ms"));
    }

    /** Use it (or less) for connect and read timeouts. */
    public int socketTimeoutMs() {
        String v = string("socket_timeout_ms");
        return v == null ? 500 : Integer.parseInt(v);
    }

    public String password() {
        return string("password");
    }

    /** Every data node, in node order, through this client's proxies. */
    public List<Address> nodes() {
        return nodes;
    }

    /** With Sentinel: where to discover the master (else empty). */
    public List<Address> sentinels() {
        return sentinels;
    }

    public String masterName() {
        return string("master_name");
    }

    /**
     * This client's proxy for an address a Sentinel reported ({@code host:port}, the
     * cluster-internal one), or null when the route has none.
     */
    public Address routed(String host, int port) {
        return route.get(host + ":" + port);
    }

    /** The run's permits for a lock that is not a mutex: absent, 1; null: unbounded. */
    public Integer capacity() {
        if (!raw.has("capacity")) return 1;
        String v = string("capacity");
        return v == null ? null : Integer.valueOf(v);
    }

    /** The harness's bound on one request: max(3 s, 4 × TTL) of the client's running time. */
    public long requestBoundMs() {
        return Math.max(3000L, 4L * ttlMs());
    }

    /** The hello as it came, for fields this class does not name. */
    public JsonObject raw() {
        return raw.deepCopy();
    }
}
