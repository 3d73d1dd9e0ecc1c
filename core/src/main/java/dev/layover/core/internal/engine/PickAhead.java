package dev.layover.core.internal.engine;

import dev.layover.core.internal.db.PickedJob;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.internal.jobs.JobRun;
import dev.layover.core.internal.jobs.Registry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * What a pick's rows tell admission before db-scheduler hands the jobs to its threads, so that
 * jobs with a provider key each of its own cost no take apiece (10,000 keys: 1.05 takes per job):
 *
 * <ul>
 *   <li>The bucket permits of the pick's jobs are leased ahead in one statement for all their keys
 *       ({@link ProviderGate#leaseAhead}). Only jobs admitted by their key's bucket alone count: a
 *       key is left out when any of its picked jobs holds a permit or a place in the key's line,
 *       has a fairness key, may go by batch or has limit keys, when the key has a concurrency
 *       limit, or while any pause is on; those admissions take their permits as they run.
 *   <li>A job that holds a permit for its run time (booked at enqueue or by its reschedule) is
 *       remembered with it ({@link #heldPermit}): its admission carries it without reading its row
 *       again.
 *   <li>The jobs picked at their places in their keys' waiting lines, within the grace of
 *       their places, have their permits taken in one statement for all their keys ({@link
 *       ProviderGate#takePlaces}), earliest place first, as many as fit, under the same rules as
 *       the leases (the type has no fairness, batching or limit keys, the key is admitted by its
 *       bucket alone). Each is remembered as a permit held since the take: its admission carries
 *       it within the grace, as a permit booked for its run time. Without it, every job of a deep
 *       backlog (its line) took its own permit, one statement and one lock of its key's bucket row
 *       per job (measured, 1,000,000 jobs over 10 keys of 50/s: 140,000 takes in 300 s, 65 s of
 *       the database's time).
 * </ul>
 *
 * Never throws. What it remembers of a job is dropped when the job's run asks for it, or after
 * {@link #FORGET_AFTER} (a job given back before it ran).
 */
final class PickAhead implements Consumer<List<PickedJob>> {

    /** How long a picked job's held permit is remembered when its run never asks for it. */
    static final Duration FORGET_AFTER = Duration.ofMinutes(1);

    private record Held(long version, Instant permitAt, long pickedAt) {}

    private final Registry registry;
    private final AdmissionControl control;
    private final ProviderGate gate;
    private final Duration grace;
    private final ConcurrentHashMap<String, Held> held = new ConcurrentHashMap<>();

    /** @param grace how late a held permit, or a place in a line, may still be spent (the gate's grace) */
    PickAhead(Registry registry, AdmissionControl control, ProviderGate gate, Duration grace) {
        this.registry = registry;
        this.control = control;
        this.gate = gate;
        this.grace = grace;
    }

    @Override
    public void accept(List<PickedJob> rows) {
        long t = System.nanoTime();
        Map<String, Integer> perKey = new HashMap<>();
        Map<String, List<PickedJob>> placed = new HashMap<>();
        Set<String> left = new HashSet<>();
        Set<String> notPlaced = new HashSet<>();
        Instant now = gate.now();
        for (PickedJob j : rows) {
            if (j.heldPermitAt() != null) {
                held.put(id(j.taskName(), j.taskInstance()), new Held(j.version(), j.heldPermitAt(), t));
            }
            String key = j.providerKey();
            if (key == null) {
                continue;
            }
            Registry.Entry<?> e = registry.get(j.taskName());
            boolean plain = e != null && !j.fair() && e.type().batching() == null && !e.type().hasLimitKeys();
            if (plain && j.inLine() && !j.placeAt().isBefore(now.minus(grace))) {
                placed.computeIfAbsent(key, k -> new ArrayList<>()).add(j);
            } else if (j.inLine()) {
                notPlaced.add(key);
            }
            if (!plain || j.heldPermitAt() != null || j.inLine()) {
                left.add(key);
            } else {
                perKey.merge(key, 1, Integer::sum);
            }
        }
        if (held.size() > 1_000) {
            held.values().removeIf(h -> t - h.pickedAt() > FORGET_AFTER.toNanos());
        }
        placed.keySet().removeAll(notPlaced); // a late place ahead takes its own permit first, as it would have
        placed.keySet().removeIf(k -> !control.admitsByBucketAlone(k));
        if (!placed.isEmpty()) {
            takePlaces(placed, now, t);
        }
        perKey.keySet().removeAll(left);
        perKey.keySet().removeIf(k -> !control.admitsByBucketAlone(k));
        if (!perKey.isEmpty()) {
            gate.leaseAhead(perKey);
        }
    }

    /** Takes the permits of the jobs at their places, and remembers each taken as a permit held since {@code now}. */
    private void takePlaces(Map<String, List<PickedJob>> placed, Instant now, long t) {
        Map<String, Integer> counts = new HashMap<>();
        placed.forEach((key, jobs) -> counts.put(key, jobs.size()));
        gate.takePlaces(counts, now).forEach((key, n) -> {
            List<PickedJob> jobs = new ArrayList<>(placed.get(key));
            jobs.sort(Comparator.comparing(PickedJob::placeAt));
            for (PickedJob j : jobs.subList(0, Math.min(n, jobs.size()))) {
                held.put(id(j.taskName(), j.taskInstance()), new Held(j.version(), now, t));
            }
        });
    }

    /**
     * @param run a picked job's run
     * @return the bucket permit its row held for its run time when this pick read it, or null;
     *     forgotten once asked
     */
    Instant heldPermit(JobRun run) {
        Held h = held.remove(id(run.taskName(), run.id()));
        return h != null && h.version() == run.version() ? h.permitAt() : null;
    }

    private static String id(String taskName, String taskInstance) {
        return taskName + '\u0000' + taskInstance;
    }
}
