package dev.layover.core.provider.state;

/** The state of a provider key's circuit breaker, as stored in {@code layover.breakers.state}. */
public enum BreakerState {
    /** Calls pass; failures are counted. */
    CLOSED("closed"),
    /** No call until {@code open_until}; jobs picked meanwhile are parked {@code breaker_open}. */
    OPEN("open"),
    /** One trial call across the fleet decides: success closes, failure opens again. */
    HALF_OPEN("half_open");

    private final String code;

    BreakerState(String code) {
        this.code = code;
    }

    /** @return the value stored in the {@code state} column */
    public String code() {
        return code;
    }

    /**
     * @param code a stored {@code state}; {@code null} (no row yet) is {@link #CLOSED}
     * @return the state
     */
    public static BreakerState fromCode(String code) {
        if (code == null) {
            return CLOSED;
        }
        for (BreakerState s : values()) {
            if (s.code.equals(code)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown breaker state: " + code);
    }
}
