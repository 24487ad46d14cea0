package io.lockchaos.kit;

import java.util.ArrayList;
import java.util.List;

import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;

/**
 * What a driver says of itself (its {@code describe} and {@code hello} answers): its name and
 * library, what it can do and what its lock needs and grants (docs/driver-protocol.md,
 * "describe"). The kit adds the capabilities that are not the lock's to declare:
 * {@code pause-points} when a kit client helper installed its command hook, and
 * {@code faked-clock}, since the JVM reads the wall clock through libc.
 */
public final class Description {
    private final String driver;
    private final String library;
    private boolean extend;
    private boolean pausePoints = true;
    private boolean renews;
    private String topology;
    private int minNodes = 1;
    private boolean shaped;
    private Integer capacity = 1;
    private List<String> modes = List.of("exclusive");
    private boolean fair;
    private Integer maxPermits;
    private int ttlGranularityMs = 1;

    private Description(String driver, String library) {
        this.driver = driver;
        this.library = library;
    }

    /** A mutex named {@code driver}, running {@code library} ("jedis 8.0.2"). */
    public static Description of(String driver, String library) {
        return new Description(driver, library);
    }

    /** Its lock has extend: the harness may send extend requests. */
    public Description extend() {
        extend = true;
        return this;
    }

    /** Its lock renews leases in the background (a watchdog), reported with renewed lines. */
    public Description renews() {
        renews = true;
        return this;
    }

    /**
     * It sends commands through no kit hook (a client the kit does not wrap): it does not
     * announce them, so faults that need pause points are refused up front.
     */
    public Description withoutPausePoints() {
        pausePoints = false;
        return this;
    }

    /** A Redlock: independent masters, at least {@code minNodes} of them. */
    public Description standalone(int minNodes) {
        topology = "standalone";
        this.minNodes = minNodes;
        return this;
    }

    /** The fewest data nodes the lock can run on (the harness starts at least that many). */
    public Description minNodes(int minNodes) {
        this.minNodes = minNodes;
        return this;
    }

    /**
     * Not a mutex: at most {@code capacity} permits at once (null: unbounded, a read-write
     * lock's readers), granted in these {@code modes} ("exclusive", "shared").
     */
    public Description grants(Integer capacity, String... modes) {
        shaped = true;
        this.capacity = capacity;
        this.modes = List.of(modes);
        return this;
    }

    /** It grants waiters in the order they asked. */
    public Description fair() {
        shaped = true;
        fair = true;
        return this;
    }

    /** The most permits one acquire may ask. */
    public Description maxPermits(int maxPermits) {
        shaped = true;
        this.maxPermits = maxPermits;
        return this;
    }

    /** The TTLs it can express are multiples of this (1000: whole seconds). */
    public Description ttlGranularityMs(int ms) {
        ttlGranularityMs = ms;
        return this;
    }

    public String driver() {
        return driver;
    }

    boolean canExtend() {
        return extend;
    }

    /** Its capabilities; {@code hooked}: whether a kit command hook is installed. */
    JsonArray capabilities(boolean hooked) {
        List<String> out = new ArrayList<>();
        if (extend) out.add("extend");
        if (pausePoints && hooked) out.add("pause-points");
        out.add("faked-clock");
        JsonArray array = new JsonArray();
        out.forEach(array::add);
        return array;
    }

    private void self(JsonObject m, boolean hooked) {
        m.addProperty("driver", driver);
        m.addProperty("language", "java");
        m.addProperty("library", library);
        m.add("capabilities", capabilities(hooked));
    }

    /** The describe answer (no client is built for it: pause points as declared). */
    JsonObject described() {
        JsonObject m = new JsonObject();
        m.addProperty("type", "describe");
        self(m, true);
        if (topology != null) m.addProperty("topology", topology);
        if (minNodes != 1) m.addProperty("min_nodes", minNodes);
        if (shaped) {
            if (capacity == null) m.add("capacity", JsonNull.INSTANCE);
            else m.addProperty("capacity", capacity);
            JsonArray array = new JsonArray();
            modes.forEach(array::add);
            m.add("modes", array);
            m.addProperty("fair", fair);
            if (maxPermits != null) m.addProperty("max_permits", maxPermits);
        }
        if (ttlGranularityMs != 1) m.addProperty("ttl_granularity_ms", ttlGranularityMs);
        if (renews) m.addProperty("renews", true);
        return m;
    }

    /** The hello answer: ready. */
    JsonObject ready(boolean hooked) {
        JsonObject m = new JsonObject();
        m.addProperty("type", "hello");
        m.addProperty("ok", true);
        self(m, hooked);
        return m;
    }
}
