package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Replay with edited args: validated against the job type, recorded in the audit log. */
@DatabaseTest
class EditedArgsReplayTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private Layover layover;
    private final List<Work> seen = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private DeadLetters start(TestDatabase db) {
        JobType<Work> work = Fixtures.work(3, (args, ctx) -> {
            seen.add(args);
            return null;
        });
        layover = Fixtures.layover(db, work).start();
        return DeadLetters.create(layover);
    }

    private static Map<String, Object> snapshot(TestDatabase db, long id) {
        return db.row("select state, args::text, replay_count, replays::text, state_changed_at "
                + "from layover.dead_letters where id = ?", id);
    }

    @Test
    void invalidEditedArgsAreRefusedWithTheReasonAndChangeNothing(TestDatabase db) {
        DeadLetters store = start(db);
        long id = Fixtures.deadLetter("edit-1").insert(db);
        Map<String, Object> before = snapshot(db, id);

        InvalidArgsException wrongType = assertThrows(InvalidArgsException.class,
                () -> store.replay(id, ReplayOptions.by("alice").args("{\"name\":\"x\",\"n\":\"not a number\"}")));
        assertTrue(wrongType.getMessage().contains("args do not read as Work"), wrongType.getMessage());
        assertTrue(wrongType.getMessage().contains("not a number"), "names the bad value: " + wrongType.getMessage());

        InvalidArgsException unknown = assertThrows(InvalidArgsException.class,
                () -> store.replay(id, ReplayOptions.by("alice").args("{\"name\":\"x\",\"n\":1,\"colour\":\"red\"}")));
        assertTrue(unknown.getMessage().contains("colour"), "names the unknown field: " + unknown.getMessage());

        InvalidArgsException notJson = assertThrows(InvalidArgsException.class,
                () -> store.replay(id, ReplayOptions.by("alice").args("{name: x")));
        assertTrue(notJson.getMessage().startsWith("job type 'work'"), notJson.getMessage());

        assertEquals(before, snapshot(db, id), "the dead letter is unchanged");
        assertEquals(0, Fixtures.jobs(db), "no job was created");
        assertEquals(0, db.count("select count(*) from layover.audit_log"), "nothing is audited");
    }

    @Test
    void validEditedArgsRunAndTheEditIsAudited(TestDatabase db) throws Exception {
        DeadLetters store = start(db);
        long id = Fixtures.deadLetter("edit-2").args("{\"name\":\"typo\",\"n\":1}").insert(db);

        Replayed r = store.replay(id, ReplayOptions.by("alice").note("fixed the typo")
                .args("{ \"name\" : \"fixed\", \"n\" : 2 }"));

        assertTrue(r.argsEdited());
        Await.equal(Fixtures.WAIT, "runs", 1, seen::size);
        assertEquals(new Work("fixed", 2), seen.get(0), "the job ran with the edited args");

        DeadLetter dl = store.get(id).orElseThrow();
        assertEquals(JSON.readTree("{\"name\":\"fixed\",\"n\":2}"), JSON.readTree(dl.args()),
                "the dead letter now holds what was replayed");
        assertTrue(dl.replays().get(0).argsEdited());

        Map<String, Object> edit = db.row("select actor, count, ids::text, note, details::text "
                + "from layover.audit_log where action = 'edit'");
        assertEquals("alice", edit.get("actor"));
        assertEquals(1L, edit.get("count"));
        assertEquals("{" + id + "}", edit.get("ids"));
        assertEquals("fixed the typo", edit.get("note"));
        JsonNode details = JSON.readTree((String) edit.get("details"));
        assertEquals(JSON.readTree("{\"name\":\"typo\",\"n\":1}"), details.get("before"));
        assertEquals(JSON.readTree("{\"name\":\"fixed\",\"n\":2}"), details.get("after"));
        assertEquals(1, db.count("select count(*) from layover.audit_log where action = 'replay' and ids = ?::bigint[]",
                "{" + id + "}"));
    }

    @Test
    void editedArgsAreForOneDeadLetterOnly(TestDatabase db) {
        DeadLetters store = start(db);
        long id = Fixtures.deadLetter("edit-3").insert(db);
        assertThrows(IllegalArgumentException.class,
                () -> store.replay(Selection.one(id), ReplayOptions.by("alice").args("{\"name\":\"x\",\"n\":1}")));
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
    }
}
