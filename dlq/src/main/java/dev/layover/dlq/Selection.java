package dev.layover.dlq;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * Which dead letters a bulk action (replay, discard, move back) works on: one id, a list of ids,
 * or everything matching a filter.
 *
 * <p>A filter is evaluated batch by batch over the ids that existed when the action started (in id
 * order), so an action on "everything matching" ends even when dead letters keep arriving, and a
 * dead letter replayed and parked again during the run is not replayed twice.
 */
public final class Selection {

    private final List<Long> ids;
    private final DeadLetterFilter filter;

    private Selection(List<Long> ids, DeadLetterFilter filter) {
        this.ids = ids;
        this.filter = filter;
    }

    /**
     * @param id a dead letter id
     * @return that dead letter
     */
    public static Selection one(long id) {
        return new Selection(List.of(id), null);
    }

    /**
     * @param ids dead letter ids; duplicates count once
     * @return those dead letters
     */
    public static Selection ids(Collection<Long> ids) {
        List<Long> list = new ArrayList<>(new LinkedHashSet<>(Objects.requireNonNull(ids, "ids")));
        for (Long id : list) {
            Objects.requireNonNull(id, "dead letter id");
        }
        return new Selection(List.copyOf(list), null);
    }

    /**
     * @param ids dead letter ids; duplicates count once
     * @return those dead letters
     */
    public static Selection ids(long... ids) {
        List<Long> list = new ArrayList<>(ids.length);
        for (long id : ids) {
            list.add(id);
        }
        return ids(list);
    }

    /**
     * @param filter a filter
     * @return every dead letter matching it (that existed when the action starts)
     */
    public static Selection matching(DeadLetterFilter filter) {
        return new Selection(null, Objects.requireNonNull(filter, "filter"));
    }

    /** @return whether this selection is a filter */
    public boolean isFilter() {
        return filter != null;
    }

    /** @return the ids, or an empty list for a filter */
    public List<Long> ids() {
        return ids == null ? List.of() : ids;
    }

    /** @return the filter, or {@code null} for ids */
    public DeadLetterFilter filter() {
        return filter;
    }

    @Override
    public String toString() {
        return filter != null ? "Selection[matching " + filter + "]" : "Selection" + ids;
    }
}
