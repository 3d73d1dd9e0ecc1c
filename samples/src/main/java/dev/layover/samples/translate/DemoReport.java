package dev.layover.samples.translate;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What the translation demo saw, read back from the fake provider's counters, the database and the
 * job's own counters, and the checks it must pass.
 *
 * @param seconds how long the demo ran
 * @param enqueued documents enqueued (one job each)
 * @param completed jobs that finished: translated, charged, delivered
 * @param waitingForPerson dead letters parked or in review (failure type to count): they wait for a person
 * @param stillLive jobs still queued when the report was made
 * @param callsPrimary requests the primary endpoint received
 * @param callsSecondary requests the secondary endpoint received
 * @param rateLimited429s 429 answers the provider sent
 * @param unavailable 503 and 529 answers the provider sent
 * @param reschedulesByReason reschedules of the demo's jobs by reason (none spends an attempt)
 * @param rateLimitedRuns handler runs that ended rate limited (no endpoint could answer)
 * @param attemptsSpentOnRateLimits attempts a rate limit cost (handler check plus database check); must be 0
 * @param attemptsSpent attempts spent, on failures of every kind
 * @param answeredByPrimary answers from the primary
 * @param answeredBySecondary answers from the secondary (the chain fell back)
 * @param fenced answers in a code fence, read after stripping it
 * @param chatty answers with prose around the JSON, read after stripping it
 * @param truncated cut-off answers refused (the job retried)
 * @param deliveryFailures deliveries that failed after the charge (the job retried)
 * @param breakerOpenings breaker transitions to open
 * @param deadLetters jobs parked at least once
 * @param parks parks in all (a replayed job that parks again counts twice)
 * @param deadLettersByFailureType dead letters by their failure type
 * @param replaysByKind replays by kind ({@code sweep}, {@code trial}, {@code manual})
 * @param jobsCharged jobs charged
 * @param creditsCharged credits in the charge rows
 * @param creditsDebited credits taken from the balances (opening minus now)
 * @param jobsChargedTwice jobs with more than one charge row
 * @param overdrawnAccounts accounts below zero
 * @param segmentsReused segments a resumed job read back from its stored steps instead of calling again
 * @param batch the fourth part: the summaries, by batch
 */
public record DemoReport(long seconds, int enqueued, int completed, Map<String, Long> waitingForPerson, long stillLive,
        int callsPrimary, int callsSecondary, int rateLimited429s, int unavailable, Map<String, Long> reschedulesByReason,
        int rateLimitedRuns, long attemptsSpentOnRateLimits, int attemptsSpent, int answeredByPrimary,
        int answeredBySecondary, int fenced, int chatty, int truncated, int deliveryFailures, int breakerOpenings,
        long deadLetters, long parks, Map<String, Long> deadLettersByFailureType, Map<String, Long> replaysByKind,
        long jobsCharged, long creditsCharged, long creditsDebited, long jobsChargedTwice, long overdrawnAccounts,
        int segmentsReused, BatchReport batch) {

    /** @return provider calls in all */
    public int calls() {
        return callsPrimary + callsSecondary;
    }

    /** @return reschedules in all */
    public long reschedules() {
        return reschedulesByReason.values().stream().mapToLong(Long::longValue).sum();
    }

    /** @return jobs waiting for a person */
    public long waitingForAPerson() {
        return waitingForPerson.values().stream().mapToLong(Long::longValue).sum();
    }

    /** @return jobs neither completed, nor waiting for a person, nor still queued; must be 0 */
    public long unaccounted() {
        return enqueued - completed - waitingForAPerson() - stillLive;
    }

    /** @return replays made by the recovery sweep (its batches and its trials) */
    public long sweepReplays() {
        return replaysByKind.getOrDefault("sweep", 0L) + replaysByKind.getOrDefault("trial", 0L);
    }

    /** @return charges beyond one per job, or debits without a charge; must be 0 */
    public long doubleCharges() {
        return jobsChargedTwice + Math.abs(creditsDebited - creditsCharged);
    }

    /** @return what is wrong; empty when every check passes */
    public List<String> problems() {
        List<String> p = new ArrayList<>();
        if (unaccounted() != 0) {
            p.add(unaccounted() + " jobs are not accounted for");
        }
        if (stillLive > 0) {
            p.add(stillLive + " jobs were still queued at the deadline");
        }
        if (attemptsSpentOnRateLimits != 0) {
            p.add(attemptsSpentOnRateLimits + " attempts were spent on rate limits");
        }
        if (doubleCharges() != 0) {
            p.add("double charges: " + doubleCharges());
        }
        if (overdrawnAccounts != 0) {
            p.add(overdrawnAccounts + " accounts overdrawn");
        }
        long otherwise = waitingForPerson.entrySet().stream()
                .filter(e -> !e.getKey().equals("handler_parked")).mapToLong(Map.Entry::getValue).sum();
        if (otherwise > 0) {
            p.add(otherwise + " jobs wait for a person for another reason than missing credits: " + waitingForPerson);
        }
        if (deadLetters > 0 && sweepReplays() == 0) {
            p.add("the recovery sweep replayed nothing");
        }
        p.addAll(batch.problems());
        return p;
    }

    /**
     * Prints the report.
     *
     * @param out where
     */
    public void print(PrintStream out) {
        out.println();
        out.printf("Report after %d s%n", seconds);
        row(out, "documents enqueued", enqueued, "");
        row(out, "completed", completed, "translated, charged once, delivered");
        row(out, "waiting for a person", waitingForAPerson(), waitingForPerson.isEmpty() ? ""
                : describe(waitingForPerson) + (waitingForPerson.containsKey("handler_parked")
                        ? " (handler_parked: the account had no credits left)" : ""));
        row(out, "still queued", stillLive, "");
        row(out, "provider calls", calls(), "primary " + callsPrimary + ", secondary " + callsSecondary
                + "; one per segment");
        row(out, "calls not repeated", segmentsReused, "segments a resumed job read back from its steps");
        row(out, "429s received", rateLimited429s, "each one a reschedule, never a retry");
        row(out, "503/529 received", unavailable, "");
        row(out, "reschedules", reschedules(), describe(reschedulesByReason));
        row(out, "attempts spent on rate limits", attemptsSpentOnRateLimits, "must be 0");
        row(out, "attempts spent on failures", attemptsSpent, "outage, cut-off answers, failed deliveries");
        row(out, "answers", answeredByPrimary + answeredBySecondary, "primary " + answeredByPrimary
                + ", secondary " + answeredBySecondary + " (fell back)");
        row(out, "answers repaired", fenced + chatty, "fenced " + fenced + ", chatty " + chatty
                + "; cut off and refused: " + truncated);
        row(out, "breaker openings", breakerOpenings, "");
        row(out, "jobs parked", deadLetters, parks + " parks; " + describe(deadLettersByFailureType));
        row(out, "replayed", replaysByKind.values().stream().mapToLong(Long::longValue).sum(),
                "by the recovery sweep " + replaysByKind.getOrDefault("sweep", 0L) + ", as its trial "
                        + replaysByKind.getOrDefault("trial", 0L) + ", by hand " + replaysByKind.getOrDefault("manual", 0L));
        row(out, "credits charged", creditsCharged, "on " + jobsCharged + " jobs; debited from balances: " + creditsDebited);
        row(out, "double charges", doubleCharges(), "must be 0 (failed deliveries retried after the charge: "
                + deliveryFailures + ")");
        row(out, "overdrawn accounts", overdrawnAccounts, "must be 0");
        batch.print(out);
        out.println();
        List<String> problems = problems();
        if (problems.isEmpty()) {
            out.println("Every job completed or is accounted for; no attempt spent on a rate limit; nothing charged twice;"
                    + " every summary went by batch.");
        } else {
            out.println("PROBLEMS:");
            problems.forEach(s -> out.println("  - " + s));
        }
    }

    /** Prints one row of the report: its label, its figure, what the figure says. */
    static void row(PrintStream out, String label, long value, String detail) {
        out.printf("  %-31s %7d%s%n", label, value, detail.isEmpty() ? "" : "   " + detail);
    }

    private static String describe(Map<String, Long> counts) {
        return counts.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "));
    }
}
