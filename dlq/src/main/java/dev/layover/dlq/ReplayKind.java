package dev.layover.dlq;

/**
 * How a replay was made; stored on the new job ({@code replay_kind}) and in the dead letter's
 * {@code replays} history. It decides what happens when the replayed job parks again (core's park
 * updates the same dead letter) and whether the replay spends the automatic replay budget.
 */
public enum ReplayKind {
    /**
     * A person's replay (console or API). Allowed from {@code parked} and {@code review}; if its
     * job parks again the dead letter goes back to {@code parked}. Spends no budget.
     */
    MANUAL("manual"),
    /**
     * The recovery sweep's replay. Allowed from {@code parked} only; spends one unit of the
     * dead letter's automatic replay budget (a dead letter whose budget is spent is moved to
     * {@code review} instead of replayed); if its job parks again the dead letter goes to
     * {@code review}.
     */
    SWEEP("sweep"),
    /**
     * The recovery trial: one replay that tests an open provider. Allowed from {@code parked}
     * only; spends no budget; if its job parks again the dead letter goes back to {@code parked}.
     */
    TRIAL("trial");

    private final String code;

    ReplayKind(String code) {
        this.code = code;
    }

    /** @return the stored value: {@code manual}, {@code sweep} or {@code trial} */
    public String code() {
        return code;
    }

    /**
     * @param code a stored kind
     * @return the kind, or {@code null} when unknown
     */
    public static ReplayKind fromCode(String code) {
        for (ReplayKind k : values()) {
            if (k.code.equals(code)) {
                return k;
            }
        }
        return null;
    }
}
