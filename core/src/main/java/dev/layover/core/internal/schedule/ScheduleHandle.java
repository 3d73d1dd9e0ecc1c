package dev.layover.core.internal.schedule;

import dev.layover.core.Enqueued;
import dev.layover.core.internal.jobs.Registry;
import dev.layover.core.schedule.InvalidScheduleException;
import dev.layover.core.schedule.Schedule;
import dev.layover.core.schedule.ScheduleInfo;
import dev.layover.core.schedule.Schedules;
import dev.layover.core.internal.db.StoredText;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** {@link Schedules}: run-time schedules, each call one transaction through {@link ScheduleStore}. */
public final class ScheduleHandle implements Schedules {

    private final ScheduleLoop scheduler;
    private final ScheduleStore store;

    /** @param scheduler the instance's scheduler (its registry, clock and store) */
    public ScheduleHandle(ScheduleLoop scheduler) {
        this.scheduler = scheduler;
        this.store = scheduler.store();
    }

    @Override
    public ScheduleInfo create(String tenant, Schedule<?> schedule) {
        String t = tenant(tenant);
        Objects.requireNonNull(schedule, "schedule");
        Instant now = scheduler.clock().instant();
        Definition d = scheduler.define(schedule, false, now);
        Instant first = d.timing().next(now);
        boolean created = store.db().transaction("creating schedule '" + schedule.name() + "'",
                c -> store.insert(c, t, schedule.name(), d, first, "api", null, 0));
        if (!created) {
            throw new InvalidScheduleException("tenant '" + t + "' has a schedule named '" + schedule.name()
                    + "' already; change it with update(..) or delete it first");
        }
        return get(t, schedule.name()).orElseThrow();
    }

    @Override
    public ScheduleInfo update(String tenant, Schedule<?> schedule) {
        String t = tenant(tenant);
        Objects.requireNonNull(schedule, "schedule");
        Instant now = scheduler.clock().instant();
        Definition d = scheduler.define(schedule, false, now);
        Instant first = d.timing().next(now);
        boolean updated = store.db().transaction("changing schedule '" + schedule.name() + "'",
                c -> store.update(c, t, schedule.name(), d, first, "api", null, 0));
        if (!updated) {
            throw notApi(t, schedule.name(), "changed");
        }
        return get(t, schedule.name()).orElseThrow();
    }

    private InvalidScheduleException notApi(String tenant, String name, String what) {
        Optional<ScheduleInfo> existing = get(tenant, name);
        if (existing.isPresent()) {
            return new InvalidScheduleException("schedule '" + name + "' is defined in code; it can be paused, resumed "
                    + "and triggered here, but it is " + what + " in the code (reconciled at start)");
        }
        return new InvalidScheduleException("tenant '" + tenant + "' has no schedule named '" + name + "'");
    }

    @Override
    public boolean pause(String tenant, String name) {
        String t = tenant(tenant);
        return store.db().transaction("pausing schedule '" + name + "'", c -> store.pause(c, t, name));
    }

    @Override
    public boolean resume(String tenant, String name) {
        String t = tenant(tenant);
        return store.db().transaction("resuming schedule '" + name + "'", c -> {
            ScheduleStore.Row r = store.lock(c, scheduler.testNow(), t, name);
            if (r == null || !r.paused()) {
                return false;
            }
            return store.resume(c, t, name, r.timing().next(r.dbNow()));
        });
    }

    @Override
    public Optional<Enqueued> triggerNow(String tenant, String name) {
        String t = tenant(tenant);
        return Optional.ofNullable(store.db().transaction("triggering schedule '" + name + "'", c -> {
            ScheduleStore.Row r = store.lock(c, scheduler.testNow(), t, name);
            if (r == null) {
                return null;
            }
            Registry.Entry<?> entry = scheduler.registry().get(r.jobType());
            if (entry == null) {
                throw new InvalidScheduleException("schedule '" + name + "': its job type '" + r.jobType()
                        + "' is not registered with this Layover instance, which cannot write its job");
            }
            String id = "sched:" + t + "/" + name + "@manual-" + r.dbNow();
            Enqueued e;
            try {
                e = scheduler.enqueue(c, entry, r, r.dbNow(), id, r.dbNow());
            } catch (ScheduleLoop.ArgsFailed failed) {
                throw new InvalidScheduleException("schedule '" + name + "': its args failed: " + failed.getMessage(),
                        failed);
            }
            store.triggered(c, t, name, r.dbNow(), id);
            return e;
        }));
    }

    @Override
    public boolean delete(String tenant, String name) {
        String t = tenant(tenant);
        boolean deleted = store.db().transaction("deleting schedule '" + name + "'", c -> store.delete(c, t, name));
        if (!deleted && get(t, name).isPresent()) {
            throw notApi(t, name, "deleted");
        }
        return deleted;
    }

    @Override
    public Optional<ScheduleInfo> get(String tenant, String name) {
        String t = tenant(tenant);
        Objects.requireNonNull(name, "name");
        List<ScheduleInfo> rows = store.db().autocommit("reading schedule '" + name + "'", c -> store.view(c, t, name));
        return rows.stream().findFirst();
    }

    @Override
    public List<ScheduleInfo> list(String tenant) {
        String t = tenant == null ? null : tenant(tenant);
        return store.db().autocommit("reading schedules", c -> store.view(c, t, null));
    }

    /** Checks a tenant: {@code ""}, or 1-60 characters without {@code /}. */
    static String tenant(String tenant) {
        if (tenant == null) {
            throw new InvalidScheduleException("a tenant is required (\"\" for none)");
        }
        if (tenant.length() > MAX_TENANT || tenant.indexOf('/') >= 0 || StoredText.unstorable(tenant)) {
            throw new InvalidScheduleException("a tenant must be at most " + MAX_TENANT + " characters, without '/' "
                    + "or NUL: '" + tenant + "'");
        }
        return tenant;
    }
}
