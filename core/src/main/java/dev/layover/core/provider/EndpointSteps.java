package dev.layover.core.provider;

import dev.layover.core.outcome.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/** What {@link FallbackChain} and {@link ApiKeyPool} share to name and summarize the endpoints they tried. */
final class EndpointSteps {

    private EndpointSteps() {}

    /** How long from now until {@code t}; zero when it has passed. */
    static Duration until(Clock clock, Instant t) {
        Duration d = Duration.between(clock.instant(), t);
        return d.isNegative() ? Duration.ZERO : d;
    }

    /** The trail result of an endpoint passed over for an admission reason of the gate. */
    static String skipped(String reason) {
        switch (reason) {
            case "cooldown":
                return "skipped_cooldown";
            case "breaker_half_open":
                return "skipped_half_open";
            case "bucket":
                return "skipped_bucket";
            default:
                return "skipped_state_unavailable";
        }
    }

    /** The smaller of two waits, null meaning unknown. */
    static Duration min(Duration a, Duration b) {
        if (a == null) {
            return b;
        }
        return b == null || a.compareTo(b) <= 0 ? a : b;
    }

    /** The larger of two waits, null meaning unknown. */
    static Duration max(Duration a, Duration b) {
        if (a == null) {
            return b;
        }
        return b == null || a.compareTo(b) >= 0 ? a : b;
    }

    /** The trail result of a failed call: its kind's tag, {@code error} for anything but a provider failure. */
    static String kind(Outcome o) {
        return isProviderFailure(o) ? o.kind().tag() : "error";
    }

    /** A breaker failure, or a request the provider refused as wrong. */
    private static boolean isProviderFailure(Outcome o) {
        return o.kind().breaker() == Outcome.BreakerEffect.FAILURE || o.kind() == Outcome.Kind.REJECTED;
    }

    /** The reason a failed call's outcome gives, for the trail. */
    static String reason(Outcome o) {
        if (!isProviderFailure(o)) {
            return String.valueOf(o);
        }
        return o.reason() != null ? o.reason() : String.valueOf(o.cause());
    }

    /** {@code head} followed by every step: its key, result and wait. */
    static String summary(String head, List<FallbackStep> steps) {
        StringBuilder b = new StringBuilder(head);
        for (FallbackStep s : steps) {
            b.append(' ').append(s.providerKey()).append(' ').append(s.result());
            if (s.retryAfter() != null) {
                b.append(" (").append(s.retryAfter().toMillis()).append(" ms)");
            }
            b.append(';');
        }
        b.setLength(b.length() - 1);
        return b.toString();
    }
}
