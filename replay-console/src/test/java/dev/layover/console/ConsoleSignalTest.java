package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.Signal;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A signal sent through the JSON API (docs/composition.md): the waiting job gets it; a second is refused. */
@DatabaseTest
class ConsoleSignalTest {

    private final List<String> got = new CopyOnWriteArrayList<>();
    private Layover layover;
    private ReplayConsole console;

    @AfterEach
    void stop() {
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    @Test
    void aSignalThroughTheApiReachesTheWaitingJob(TestDatabase db) {
        JobType<Fixtures.Work> work = JobType.builder("work", Fixtures.Work.class).handler((a, ctx) -> {
            Signal s = ctx.awaitSignal("approved", Duration.ofHours(1));
            got.add(s.payloadJson());
            return Outcome.done();
        }).build();
        layover = Fixtures.layover(db, work).start();
        console = ReplayConsole.start(layover, Fixtures.options());
        ApiClient api = new ApiClient(console);
        String id = layover.enqueue(work, new Fixtures.Work("w", 1)).id();
        Await.until(Fixtures.WAIT, "the job waits", () -> "signal".equals(db.value(
                "select reschedule_reason from layover.jobs where id = ?", id)));

        assertEquals(400, api.post("/api/jobs/work/" + id + "/signal", "{}").status());
        ApiClient.Resp ok = api.post("/api/jobs/work/" + id + "/signal", "{\"name\": \"approved\", \"payload\": {\"by\": \"alice\"}}");
        assertEquals(200, ok.status(), ok.body());
        Await.equal(Fixtures.WAIT, "payloads", List.of("{\"by\": \"alice\"}"), () -> List.copyOf(got));
        ApiClient.Resp again = api.post("/api/jobs/work/" + id + "/signal", "{\"name\": \"approved\"}");
        assertEquals(404, again.status());
        assertTrue(again.body().contains("waits for signal 'approved'"), again.body());
        assertEquals(1L, db.count("select count(*) from layover.audit_log where action = 'signal'"));
    }
}
