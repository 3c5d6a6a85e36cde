//! Container faults with their leases, undone once, and container samples with their run.

use super::*;

#[tokio::test]
async fn container_faults_keep_their_lease_until_undone_once() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 0).await;
        let fault = NewContainerFault {
            container_id: "c0ffee".into(),
            container_name: "shop_payment_1".into(),
            service: "payment".into(),
            action: r#"{"action":"pause"}"#.into(),
            owner: "host/1/abc".into(),
            run_id: Some(run),
            started_ms: 10_000,
            until_ms: 15_000,
        };
        let id = store.insert_container_fault(&fault).await.unwrap();
        let pending_ids = |rows: Vec<ContainerFaultRow>| -> Vec<i64> {
            rows.into_iter()
                .map(|row| row.id)
                .filter(|row| *row == id)
                .collect()
        };
        // In force but not expired before 15 s; expired from then on.
        let before = store.pending_container_faults(Some(14_999)).await.unwrap();
        assert!(pending_ids(before).is_empty());
        let after = store.pending_container_faults(Some(15_000)).await.unwrap();
        assert_eq!(pending_ids(after), vec![id]);
        // A renewal moves the end of the lease.
        store.renew_container_fault(id, 20_000).await.unwrap();
        let renewed = store.pending_container_faults(Some(15_000)).await.unwrap();
        assert!(pending_ids(renewed).is_empty());
        // Undone once: a second undo (another controller's sweep) changes nothing.
        assert!(
            store
                .finish_container_fault(id, 16_000, None)
                .await
                .unwrap()
        );
        assert!(
            !store
                .finish_container_fault(id, 17_000, Some("late"))
                .await
                .unwrap()
        );
        let row = store.container_fault(id).await.unwrap().unwrap();
        assert_eq!(row.fault.until_ms, 20_000);
        assert_eq!((row.undone_ms, row.undo_error), (Some(16_000), None));
        assert_eq!(store.container_faults_of_run(run).await.unwrap().len(), 1);
        let all = store.pending_container_faults(None).await.unwrap();
        assert!(pending_ids(all).is_empty());
        // A lease cannot end before it starts.
        let backwards = NewContainerFault {
            until_ms: 9_000,
            ..fault
        };
        let refused = store.insert_container_fault(&backwards).await.unwrap_err();
        assert!(refused.to_string().contains("until_ms"), "{refused}");
    }
}

#[tokio::test]
async fn container_samples_round_trip_with_their_run() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 1).await;
        let samples: Vec<ContainerSampleRecord> = (1..=3u32)
            .flat_map(|second| {
                ["shop_checkout_1", "shop_checkout_2"]
                    .into_iter()
                    .enumerate()
                    .map(move |(index, container)| ContainerSampleRecord {
                        second,
                        container: container.into(),
                        service: "checkout".into(),
                        replica: index as u32 + 1,
                        cpu_seconds: 0.25 * f64::from(second),
                        memory_bytes: 10_000_000 + u64::from(second),
                        rx_bytes: 1_000 * u64::from(second),
                        tx_bytes: 2_000,
                        energy_joules: 0.5,
                    })
            })
            .collect();
        store.insert_container_samples(run, &samples).await.unwrap();
        assert_eq!(store.container_samples(run).await.unwrap(), samples);
        let too_big = ContainerSampleRecord {
            second: 9,
            memory_bytes: u64::MAX,
            ..samples[0].clone()
        };
        let refused = store
            .insert_container_samples(run, &[too_big])
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("memory_bytes"), "{refused}");
        assert_eq!(
            store.container_samples(run).await.unwrap().len(),
            samples.len()
        );
    }
}
