//! Game-day annotations: stored tied to what runs when they are written, and put back into the hub when the
//! dashboard starts.

use controller::store::{AnnotationRow, NewAnnotation, StoreError};

use super::{EmbeddedOperations, entry_of, store_failed};
use crate::hub::LiveEvent;
use crate::operations::{AnnotationEntry, AnnotationRequest, OperationError};

impl EmbeddedOperations {
    /// Puts the latest stored annotations (as many as the hub keeps) back into the hub's live state.
    pub(super) async fn restore_annotations(&self) -> Result<(), OperationError> {
        let hub = &self.inner.hub;
        let kept = hub.config().history.annotations;
        let stored = self
            .inner
            .store
            .latest_annotations(kept)
            .await
            .map_err(store_failed)?;
        if stored.is_empty() {
            return Ok(());
        }
        for row in &stored {
            hub.publish(LiveEvent::Annotation(entry_of(row).live()));
        }
        hub.flush();
        Ok(())
    }

    pub(super) async fn store_annotation(
        &self,
        request: AnnotationRequest,
    ) -> Result<AnnotationEntry, OperationError> {
        // Refused fields first: a bad note is a bad request whatever it is about.
        controller::store::annotation_text(&request.text).map_err(store_failed)?;
        controller::store::annotation_author(request.author.as_deref()).map_err(store_failed)?;
        let store = &self.inner.store;
        let running = store.running().await.map_err(store_failed)?;
        let (experiment_id, run_id) = match request.experiment_id {
            None => match running {
                Some((experiment, run)) => (Some(experiment), run),
                None => (None, None),
            },
            Some(id) => {
                let experiment = self.experiment_row(id).await?.id;
                // The running run only belongs to the note if the note is about its experiment.
                let run = running
                    .filter(|(running, _)| *running == experiment)
                    .and_then(|(_, run)| run);
                (Some(experiment), run)
            }
        };
        let row = store
            .insert_annotation(&NewAnnotation {
                at_ms: request.at_ms,
                text: request.text,
                author: request.author,
                experiment_id,
                run_id,
            })
            .await
            .map_err(store_failed)?;
        Ok(entry_of(&row))
    }

    pub(super) async fn annotations_of(
        &self,
        experiment: i64,
    ) -> Result<Vec<AnnotationEntry>, OperationError> {
        let id = self.experiment_row(experiment).await?.id;
        entries(self.inner.store.annotations(id).await)
    }

    /// The latest `limit` stored annotations of any experiment, oldest first.
    pub(super) async fn latest_annotations_of(
        &self,
        limit: usize,
    ) -> Result<Vec<AnnotationEntry>, OperationError> {
        entries(self.inner.store.latest_annotations(limit).await)
    }
}

/// Stored annotation rows as the operations answer them.
fn entries(
    rows: Result<Vec<AnnotationRow>, StoreError>,
) -> Result<Vec<AnnotationEntry>, OperationError> {
    Ok(rows.map_err(store_failed)?.iter().map(entry_of).collect())
}
