package dev.layover.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.schedule.Schedule;
import dev.layover.core.schedule.ScheduleInfo;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Recurring jobs in the starter: {@code Schedule} beans and {@code layover.schedules.<name>.*} are
 * registered and reconciled at start; a refused schedule names its property and nothing is written.
 */
@DatabaseTest
class SchedulePropertiesTest {

    /** A digest's args. */
    record Digest(String scope) {}

    @Configuration(proxyBeanMethods = false)
    static class App {
        @Bean
        JobType<Digest> digest() {
            return JobType.of("starter-digest", Digest.class, (a, ctx) -> Outcome.done());
        }

        @Bean
        Schedule<Digest> nightly(JobType<Digest> digest) {
            return Schedule.cron("nightly", digest, "30 2 * * *", ZoneId.of("Europe/Berlin"), new Digest("all"));
        }
    }

    @Test
    void scheduleBeansAndPropertiesAreRegisteredAndReconciledAtStart(TestDatabase db) {
        Contexts.on(db).withUserConfiguration(App.class).withPropertyValues(
                "layover.schedules.hourly.job-type=starter-digest",
                "layover.schedules.hourly.every=1h",
                "layover.schedules.hourly.args={\"scope\": \"recent\"}",
                "layover.schedules.hourly.overlap=queue",
                "layover.schedules.hourly.missed-runs=catch-up",
                "layover.schedules.hourly.missed-window=6h",
                "layover.schedule-generation=7").run(context -> {
                    assertThat(context).hasNotFailed();
                    Layover layover = context.getBean(Layover.class);
                    List<ScheduleInfo> all = layover.schedules().list("");
                    assertEquals(List.of("hourly", "nightly"), all.stream().map(ScheduleInfo::name).toList());
                    ScheduleInfo hourly = all.get(0);
                    assertEquals(Duration.ofHours(1), hourly.every());
                    assertEquals("queue", hourly.overlap());
                    assertEquals("catch_up", hourly.missed());
                    assertEquals("code", hourly.source());
                    assertTrue(hourly.argsJson().contains("recent"), hourly.argsJson());
                    assertEquals("30 2 * * *", all.get(1).cron());
                    assertEquals(7L, db.value("select generation from layover.schedules where name = 'hourly'"));
                });
    }

    @Test
    void aRefusedScheduleNamesItsPropertyAndNothingIsWritten(TestDatabase db) {
        Contexts.on(db).withUserConfiguration(App.class).withPropertyValues(
                "layover.schedules.broken.job-type=starter-digest",
                "layover.schedules.broken.cron=0 25 * * *").run(context -> {
                    assertThat(context).hasFailed();
                    InvalidLayoverPropertyException e = find(context.getStartupFailure());
                    assertEquals("layover.schedules.broken.cron", e.property());
                    assertTrue(e.getMessage().contains("hour field has 25"), e.getMessage());
                });
        Contexts.on(db).withUserConfiguration(App.class).withPropertyValues(
                "layover.schedules.unreadable.job-type=starter-digest",
                "layover.schedules.unreadable.every=1h",
                "layover.schedules.unreadable.args={\"scope\": [1, 2]}").run(context -> {
                    assertThat(context).hasFailed();
                    InvalidLayoverPropertyException e = find(context.getStartupFailure());
                    assertEquals("layover.schedules.unreadable", e.property());
                    assertTrue(e.getMessage().contains("cannot read its args"), e.getMessage());
                });
        Contexts.on(db).withUserConfiguration(App.class).withPropertyValues(
                "layover.schedules.orphan.job-type=nope", "layover.schedules.orphan.every=1h").run(context -> {
                    assertThat(context).hasFailed();
                    assertEquals("layover.schedules.orphan.job-type", find(context.getStartupFailure()).property());
                });
        assertEquals(0, db.count("select count(*) from layover.schedules"));
    }

    private static InvalidLayoverPropertyException find(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof InvalidLayoverPropertyException e) {
                return e;
            }
        }
        throw new AssertionError("no InvalidLayoverPropertyException in " + t, t);
    }
}
