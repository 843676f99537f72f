"""Expert iteration (``expert_iteration``) and MALT-style rounds of response trees and DPO (``malt``)."""
