package dev.layover.dlq;

/**
 * The {@code state} column of {@code layover.dead_letters}.
 *
 * <pre>
 * parked ──replay──▶ replayed        (the replay's job parks again ─▶ parked, or review after a sweep)
 * parked ──────────▶ review          (a sweep replay failed again, or the replay budget is spent)
 * parked | review ─▶ discarded
 * review ──────────▶ parked          (moved back by a person)
 * </pre>
 *
 * <p>{@link #REPLAYED} and {@link #DISCARDED} entries are purged by {@link DeadLetterRetention}
 * after its period; {@link #PARKED} and {@link #REVIEW} entries are never purged.
 */
public enum DeadLetterState {
    /** Waiting: for the recovery sweep (auto-replayable failure types) or for a person. */
    PARKED("parked"),
    /** A replay created a job; the entry stays as the record of what happened. */
    REPLAYED("replayed"),
    /** Needs a person: an automatic replay failed again, or its automatic replay budget is spent. */
    REVIEW("review"),
    /** A person decided it will not run again. */
    DISCARDED("discarded");

    private final String code;

    DeadLetterState(String code) {
        this.code = code;
    }

    /** @return the value stored in the {@code state} column, e.g. {@code "parked"} */
    public String code() {
        return code;
    }

    /**
     * @param code a stored state
     * @return the state
     * @throws IllegalArgumentException for an unknown code
     */
    public static DeadLetterState fromCode(String code) {
        for (DeadLetterState s : values()) {
            if (s.code.equals(code)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown dead letter state: " + code);
    }
}
