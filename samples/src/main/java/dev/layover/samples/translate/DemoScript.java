package dev.layover.samples.translate;

import com.openai.client.OpenAIClient;
import dev.layover.core.JobPolicy;
import dev.layover.core.batch.BatchSettings;
import dev.layover.core.batch.OpenAiBatches;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.provider.FakeProvider;
import dev.layover.testing.provider.FakeProvider.Phase;
import dev.layover.testing.provider.FakeProvider.Stage;
import dev.layover.testing.provider.FakeProvider.Style;
import java.time.Duration;
import java.util.List;

/**
 * The demo's timeline and the settings that go with it, in two speeds: the real demo (about a
 * minute and a half) and {@code --fast} (a few seconds, for the test).
 *
 * <pre>
 *            normal        throttled                   outage                       recovered
 * primary    answers       429, retry-after            503                          answers
 * secondary  answers (its own, smaller limit) ----->   529 overloaded               answers
 * documents  arrive at a steady rate ........................................ stop  (drained)
 * </pre>
 *
 * <p>Both endpoints have a request limit at the fake provider, and Layover a bucket a little
 * under it, so in normal times the fleet stays under the limits instead of discovering them by
 * 429s; the 429s come from the throttled phase, a limit Layover could not know in advance.
 * Answers are sometimes fenced, chatty or cut off, so the JSON repair and its refusals show.
 *
 * @param fast whether this is the compressed script
 * @param normal how long the provider is normal at first
 * @param throttled how long the primary then answers 429
 * @param outage how long both endpoints then fail (503 and 529)
 * @param produceFor how long documents arrive (from the start)
 * @param documentsPerSecond how many arrive per second
 * @param deadline when the demo stops waiting and reports, from the start
 * @param throttledRetryAfter the primary's retry-after while throttled
 * @param primaryPerSecond the primary's limit at the fake provider (requests per second)
 * @param secondaryPerSecond the secondary's limit at the fake provider
 * @param progressEvery how often a progress line is printed when stdout is not a terminal
 */
public record DemoScript(boolean fast, Duration normal, Duration throttled, Duration outage, Duration produceFor,
        double documentsPerSecond, Duration deadline, Duration throttledRetryAfter, int primaryPerSecond,
        int secondaryPerSecond, Duration progressEvery) {

    /** The phases, in order. */
    public enum Step {
        /** Both endpoints answer. */
        NORMAL,
        /** The primary answers 429; the secondary answers within its own limit. */
        THROTTLED,
        /** The primary answers 503, the secondary 529. */
        OUTAGE,
        /** Both answer again. */
        RECOVERED
    }

    /** @return the real demo: about 20 s per phase, documents for 50 s, a report within two minutes */
    public static DemoScript normalSpeed() {
        return new DemoScript(false, Duration.ofSeconds(18), Duration.ofSeconds(17), Duration.ofSeconds(20),
                Duration.ofSeconds(50), 3, Duration.ofSeconds(110), Duration.ofSeconds(4), 6, 2, Duration.ofSeconds(5));
    }

    /** @return the compressed script of {@code --fast}: the same story in about ten seconds */
    public static DemoScript fastSpeed() {
        return new DemoScript(true, Duration.ofMillis(2000), Duration.ofMillis(2500), Duration.ofMillis(5000),
                Duration.ofMillis(8000), 12, Duration.ofSeconds(40), Duration.ofSeconds(1), 40, 10, Duration.ofSeconds(1));
    }

    /** @return when the throttled phase starts */
    public Duration throttledAt() {
        return normal;
    }

    /** @return when the outage starts */
    public Duration outageAt() {
        return normal.plus(throttled);
    }

    /** @return when the provider has recovered */
    public Duration recoveredAt() {
        return outageAt().plus(outage);
    }

    /**
     * @param elapsed time since the start
     * @return the phase at that time
     */
    public Step stepAt(Duration elapsed) {
        if (elapsed.compareTo(throttledAt()) < 0) {
            return Step.NORMAL;
        }
        if (elapsed.compareTo(outageAt()) < 0) {
            return Step.THROTTLED;
        }
        if (elapsed.compareTo(recoveredAt()) < 0) {
            return Step.OUTAGE;
        }
        return Step.RECOVERED;
    }

    /**
     * Sets the fake provider's limits and starts its script (from now).
     *
     * @param fake the fake provider
     */
    public void start(FakeProvider fake) {
        Duration forever = Duration.ofDays(1);
        fake.primary().limitPerSecond(primaryPerSecond).throttledRetryAfter(throttledRetryAfter)
                .script(new Stage(Phase.NORMAL, normal), new Stage(Phase.THROTTLED, throttled),
                        new Stage(Phase.OUTAGE, outage), new Stage(Phase.NORMAL, forever));
        fake.secondary().limitPerSecond(secondaryPerSecond)
                .script(new Stage(Phase.NORMAL, normal.plus(throttled)), new Stage(Phase.OVERLOADED, outage),
                        new Stage(Phase.NORMAL, forever));
        styles(fake, Step.NORMAL);
    }

    /**
     * How answers are written in a phase: the primary cuts off one answer in 12 at first and
     * fences one in 3 after the outage; the secondary wraps one in 2 in prose.
     *
     * @param fake the fake provider
     * @param step the phase starting
     */
    public void styles(FakeProvider fake, Step step) {
        if (step == Step.NORMAL) {
            fake.primary().styleEvery(Style.TRUNCATED, 12);
            fake.secondary().styleEvery(Style.CHATTY, 2);
        } else if (step == Step.RECOVERED) {
            fake.primary().styleEvery(Style.FENCED, 3);
        }
    }

    /**
     * @param step a phase
     * @return what the newcomer should watch for in it
     */
    public String describe(Step step) {
        switch (step) {
            case NORMAL:
                return "provider normal: the primary answers within its limit (" + primaryPerSecond
                        + "/s; Layover's bucket keeps the fleet under it); 1 answer in 12 comes back cut off";
            case THROTTLED:
                return "provider throttled: the primary answers 429 (retry-after " + throttledRetryAfter.toSeconds()
                        + " s); the chain falls back to the secondary (" + secondaryPerSecond
                        + "/s); the rest wait, rescheduled without spending an attempt";
            case OUTAGE:
                return "provider outage: the primary answers 503, the secondary 529; breakers open, jobs park";
            default:
                return "provider recovered: a trial call closes the breaker, the recovery sweep replays the parked jobs";
        }
    }

    /** @return the job type's limits for this speed */
    public JobPolicy policy() {
        return fast
                ? JobPolicy.defaults().withMaxAttempts(4).withBackoff(Duration.ofMillis(200), Duration.ofSeconds(1))
                        .withMaxReschedules(500).withMaxDeferral(Duration.ofMinutes(10))
                : JobPolicy.defaults().withMaxAttempts(4).withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(8))
                        .withMaxReschedules(500).withMaxDeferral(Duration.ofMinutes(10));
    }

    /**
     * Breakers open quickly here (3 failures among at least 3 calls within 10 s; fast: 4 within
     * 3 s), and only for a few seconds. Overload cooldowns are kept short (up to 2 s; fast: 1 s):
     * a cooldown spaces the calls to a failing endpoint, and failures spaced further apart than
     * the window would never open its breaker.
     *
     * @return breaker settings for every key
     */
    public BreakerSettings breakers() {
        return fast
                ? BreakerSettings.defaults().withThresholds(Duration.ofSeconds(3), 4, 4, 0.5)
                        .withOpenFor(Duration.ofMillis(1500), Duration.ofSeconds(3)).withTrialTimeout(Duration.ofSeconds(10))
                : BreakerSettings.defaults().withThresholds(Duration.ofSeconds(10), 3, 3, 0.5)
                        .withOpenFor(Duration.ofSeconds(6), Duration.ofSeconds(12)).withTrialTimeout(Duration.ofSeconds(30));
    }

    /** @return cooldowns when the provider names no wait */
    public CooldownSettings cooldowns() {
        return fast
                ? new CooldownSettings(Duration.ofMillis(250), Duration.ofSeconds(2), Duration.ofMillis(250),
                        Duration.ofSeconds(1), Duration.ofSeconds(10))
                : new CooldownSettings(Duration.ofSeconds(1), Duration.ofSeconds(30), Duration.ofSeconds(1),
                        Duration.ofSeconds(2), Duration.ofSeconds(60));
    }

    /** @return Layover's bucket for the primary: a little under the provider's limit */
    public BucketSettings primaryBucket() {
        return BucketSettings.requestsPerSecond(primaryPerSecond * 0.8);
    }

    /** @return Layover's bucket for the secondary: a little under the provider's limit */
    public BucketSettings secondaryBucket() {
        return BucketSettings.requestsPerSecond(secondaryPerSecond * 0.8);
    }

    /**
     * The recovery sweep, quicker than its defaults so that the story fits in the demo: it looks
     * every second (fast: 200 ms), replays batches of 10 growing ×2 spread over 3 s (fast: 1 s),
     * and makes a trial 5 s, then 15 s apart (fast: 1 s, 2 s) while no traffic tests the breaker.
     *
     * @return the sweep, a Layover plugin
     */
    public RecoverySweep sweep() {
        return fast
                ? RecoverySweep.builder().checkEvery(Duration.ofMillis(200)).firstBatch(10).spreadOver(Duration.ofSeconds(1))
                        .trialEvery(Duration.ofSeconds(1), Duration.ofSeconds(2)).build()
                : RecoverySweep.builder().checkEvery(Duration.ofSeconds(1)).firstBatch(10).spreadOver(Duration.ofSeconds(3))
                        .trialEvery(Duration.ofSeconds(5), Duration.ofSeconds(15)).build();
    }

    /**
     * Batching for the summaries ({@link SummaryJob#KEY}) through OpenAI's Batch API at the fake
     * provider's primary endpoint: the defaults (1 h expected completion, 15 min rescue margin,
     * 0.5 discount) except the timing, so that batches finish within the demo: an open batch is
     * sealed and submitted once 3 s old (fast: 1 s) and polled every second (fast: 250 ms). The
     * fake answers a batch at its first poll.
     *
     * @param primary the primary endpoint's client (its retries off)
     * @return the key's batch settings
     */
    public BatchSettings batching(OpenAIClient primary) {
        return BatchSettings.of(OpenAiBatches.of(primary))
                .withMaxGatherAge(fast ? Duration.ofSeconds(1) : Duration.ofSeconds(3))
                .withPollInterval(fast ? Duration.ofMillis(250) : Duration.ofSeconds(1));
    }

    /** @return how often the workers poll */
    public Duration pollInterval() {
        return fast ? Duration.ofMillis(100) : Duration.ofMillis(250);
    }

    /** @return the target languages documents ask for, in turn */
    public static List<String> targets() {
        return List.of("fr", "de", "es", "ja", "pt");
    }
}
