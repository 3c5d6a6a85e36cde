//! Game-day annotations: validated, stored with the experiment and run they are about, listed.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{
    AnnotationId, AnnotationRow, ExperimentId, MAX_ANNOTATION_CHARS, MAX_AUTHOR_CHARS,
    NewAnnotation, RunId, Store, StoreError, int,
};

/// An annotation's text, trimmed: not empty, at most [`MAX_ANNOTATION_CHARS`] characters.
pub fn annotation_text(text: &str) -> Result<String, StoreError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(StoreError::Invalid {
            field: "text",
            message: "empty".into(),
        });
    }
    if text.chars().count() > MAX_ANNOTATION_CHARS {
        return Err(StoreError::Invalid {
            field: "text",
            message: format!("longer than {MAX_ANNOTATION_CHARS} characters"),
        });
    }
    Ok(text.to_owned())
}

/// An annotation's author, trimmed; empty means none. At most [`MAX_AUTHOR_CHARS`] characters.
pub fn annotation_author(author: Option<&str>) -> Result<Option<String>, StoreError> {
    let Some(author) = author.map(str::trim).filter(|author| !author.is_empty()) else {
        return Ok(None);
    };
    if author.chars().count() > MAX_AUTHOR_CHARS {
        return Err(StoreError::Invalid {
            field: "author",
            message: format!("longer than {MAX_AUTHOR_CHARS} characters"),
        });
    }
    Ok(Some(author.to_owned()))
}

impl Store {
    /// Stores an annotation (text and author validated and trimmed, see [`annotation_text`]; a run
    /// must belong to the annotation's experiment) and returns it as stored. Nothing is written when
    /// a field is refused.
    pub async fn insert_annotation(
        &self,
        annotation: &NewAnnotation,
    ) -> Result<AnnotationRow, StoreError> {
        let text = annotation_text(&annotation.text)?;
        let author = annotation_author(annotation.author.as_deref())?;
        if let Some(run) = annotation.run_id {
            // A run never changes experiment, so checking before the insert is enough.
            let owner: Option<i64> = sqlx::query("SELECT experiment_id FROM runs WHERE id = $1")
                .bind(run.0)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| row.try_get(0))
                .transpose()?;
            if owner.is_none() || owner != annotation.experiment_id.map(|id| id.0) {
                return Err(StoreError::Invalid {
                    field: "run_id",
                    message: format!("run {run} is not a run of the annotation's experiment"),
                });
            }
        }
        let row = sqlx::query(
            "INSERT INTO annotations (at_ms, text, author, experiment_id, run_id) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(annotation.at_ms)
        .bind(&text)
        .bind(author.as_deref())
        .bind(annotation.experiment_id.map(|id| id.0))
        .bind(annotation.run_id.map(|id| id.0))
        .fetch_one(&self.pool)
        .await?;
        Ok(AnnotationRow {
            id: AnnotationId(row.try_get(0)?),
            at_ms: annotation.at_ms,
            text,
            author,
            experiment_id: annotation.experiment_id,
            run_id: annotation.run_id,
        })
    }

    /// An experiment's annotations, oldest first.
    pub async fn annotations(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<AnnotationRow>, StoreError> {
        self.rows_by(
            &format!("{ANNOTATION_SELECT} WHERE experiment_id = $1 ORDER BY at_ms, id"),
            experiment.0,
            annotation_of,
        )
        .await
    }

    /// The `limit` latest annotations of any experiment (or none), oldest first.
    pub async fn latest_annotations(&self, limit: usize) -> Result<Vec<AnnotationRow>, StoreError> {
        let mut annotations = self
            .rows_by(
                &format!("{ANNOTATION_SELECT} ORDER BY at_ms DESC, id DESC LIMIT $1"),
                int(limit as u64),
                annotation_of,
            )
            .await?;
        annotations.reverse();
        Ok(annotations)
    }
}

const ANNOTATION_SELECT: &str =
    "SELECT id, at_ms, text, author, experiment_id, run_id FROM annotations";

fn annotation_of(row: &AnyRow) -> Result<AnnotationRow, StoreError> {
    Ok(AnnotationRow {
        id: AnnotationId(row.try_get("id")?),
        at_ms: row.try_get("at_ms")?,
        text: row.try_get("text")?,
        author: row.try_get("author")?,
        experiment_id: row
            .try_get::<Option<i64>, _>("experiment_id")?
            .map(ExperimentId),
        run_id: row.try_get::<Option<i64>, _>("run_id")?.map(RunId),
    })
}
