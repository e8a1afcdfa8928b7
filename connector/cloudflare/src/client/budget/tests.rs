use super::*;

#[tokio::test(start_paused = true)]
async fn the_request_past_the_budget_waits_for_the_oldest_to_age_out() {
    let budget = Budget::new(RateLimit {
        requests: 3,
        per: Duration::from_secs(60),
    });
    let start = Instant::now();
    for _ in 0..3 {
        budget.acquire().await;
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
    tokio::time::advance(Duration::from_secs(10)).await;
    budget.acquire().await;
    assert_eq!(start.elapsed(), Duration::from_secs(60));
    // Two more tokens came back at 60 s (the first window's); the one after them
    // waits for the one spent at 60 s.
    budget.acquire().await;
    budget.acquire().await;
    assert_eq!(start.elapsed(), Duration::from_secs(60));
    budget.acquire().await;
    assert_eq!(start.elapsed(), Duration::from_secs(120));
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_never_exceed_the_budget() {
    let budget = std::sync::Arc::new(Budget::new(RateLimit {
        requests: 5,
        per: Duration::from_secs(10),
    }));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..23 {
        let budget = budget.clone();
        tasks.push(tokio::spawn(async move {
            budget.acquire().await;
            start.elapsed()
        }));
    }
    let mut starts = Vec::new();
    for task in tasks {
        starts.push(task.await.unwrap());
    }
    starts.sort();
    // Every window of 10 s holds at most 5 starts.
    for (i, &at) in starts.iter().enumerate() {
        let in_window = starts[i..]
            .iter()
            .take_while(|&&later| later < at + Duration::from_secs(10))
            .count();
        assert!(in_window <= 5, "{starts:?}");
    }
    assert_eq!(starts.last().copied(), Some(Duration::from_secs(40)));
}
