// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

/// @title CreditFacility
/// @notice Escrow of receivables and collateral, lender-wallet-pays-supplier, repayment and recovery of the
/// receivable-backed credit service. Every id is bytes32 keccak256(utf8(id)) of the service's id.
/// Money leaves the contract only to lenders (operator-driven, lender first) or back to the job's borrower.
contract CreditFacility is ReentrancyGuard {
    using SafeERC20 for IERC20;

    struct Job {
        address client;
        address borrower;
        address asset;
        uint256 escrowAmount;
        uint256 collateralAmount;
        bool settled;
    }

    address public immutable operator;

    mapping(bytes32 jobKey => Job) private _jobs;
    mapping(address asset => uint256 amount) public reserveOf;
    mapping(bytes32 offerKey => bool paid) public offerPaid;
    mapping(bytes32 advanceKey => bool liquidated) public advanceLiquidated;

    event JobFunded(bytes32 indexed jobKey, address indexed client, address indexed borrower, address asset, uint256 amount);
    event CollateralPosted(bytes32 indexed jobKey, address indexed borrower, address asset, uint256 amount);
    event SupplierPaid(bytes32 indexed offerKey, address indexed payer, address indexed supplier, address asset, uint256 amount);
    event Repaid(
        bytes32 indexed advanceKey,
        address indexed lender,
        address indexed payer,
        address asset,
        uint256 amount,
        uint256 reserveAmount
    );
    event LenderPaid(bytes32 indexed jobKey, bytes32 indexed advanceKey, address indexed lender, uint256 amount);
    event JobSettled(bytes32 indexed jobKey, address indexed borrower, uint256 toLenders, uint256 toReserve, uint256 toBorrower);
    event Liquidated(
        bytes32 indexed advanceKey,
        bytes32 indexed jobKey,
        address indexed lender,
        address asset,
        uint256 fromRevenue,
        uint256 fromCollateral,
        uint256 fromReserve
    );

    error ZeroAmount();
    error ZeroAddress();
    error ZeroKey();
    error NotOperator(address caller);
    error NotBorrower(address caller);
    error UnknownJob(bytes32 jobKey);
    error JobAlreadyFunded(bytes32 jobKey);
    error JobAlreadySettled(bytes32 jobKey);
    error AssetMismatch(address expected, address given);
    error DeadlinePassed(uint256 deadline, uint256 nowSeconds);
    error OfferAlreadyPaid(bytes32 offerKey);
    error AdvanceAlreadyLiquidated(bytes32 advanceKey);
    error ReserveOverAmount(uint256 reserveAmount, uint256 amount);
    error LengthMismatch();
    error OverHeld(uint256 requested, uint256 held);
    error NoJobForRevenue();

    modifier onlyOperator() {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _;
    }

    constructor(address operator_) {
        if (operator_ == address(0)) revert ZeroAddress();
        operator = operator_;
    }

    /// @notice The job's client escrows the receivable for `borrower`.
    function fundJob(bytes32 jobKey, address asset, uint256 amount, address borrower) external nonReentrant {
        if (jobKey == bytes32(0)) revert ZeroKey();
        if (asset == address(0) || borrower == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        if (_jobs[jobKey].client != address(0)) revert JobAlreadyFunded(jobKey);
        _jobs[jobKey] = Job({
            client: msg.sender,
            borrower: borrower,
            asset: asset,
            escrowAmount: amount,
            collateralAmount: 0,
            settled: false
        });
        IERC20(asset).safeTransferFrom(msg.sender, address(this), amount);
        emit JobFunded(jobKey, msg.sender, borrower, asset, amount);
    }

    /// @notice The job's borrower locks collateral in the job's asset.
    function postCollateral(bytes32 jobKey, address asset, uint256 amount) external nonReentrant {
        Job storage job = _liveJob(jobKey);
        if (msg.sender != job.borrower) revert NotBorrower(msg.sender);
        if (asset != job.asset) revert AssetMismatch(job.asset, asset);
        if (amount == 0) revert ZeroAmount();
        job.collateralAmount += amount;
        IERC20(asset).safeTransferFrom(msg.sender, address(this), amount);
        emit CollateralPosted(jobKey, msg.sender, asset, amount);
    }

    /// @notice The lender's session key pays the supplier directly, through the allowance of its setup transaction.
    /// Reverts after the lease's `deadline` (unix seconds, inclusive) and on a second payment of the same offer.
    function paySupplier(bytes32 offerKey, address supplier, address asset, uint256 amount, uint256 deadline)
        external
        nonReentrant
    {
        if (offerKey == bytes32(0)) revert ZeroKey();
        if (supplier == address(0) || asset == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        if (block.timestamp > deadline) revert DeadlinePassed(deadline, block.timestamp);
        if (offerPaid[offerKey]) revert OfferAlreadyPaid(offerKey);
        offerPaid[offerKey] = true;
        IERC20(asset).safeTransferFrom(msg.sender, supplier, amount);
        emit SupplierPaid(offerKey, msg.sender, supplier, asset, amount);
    }

    /// @notice Anyone repays a lender: `amount` in total, of which `reserveAmount` goes to the insurance reserve.
    function repay(bytes32 advanceKey, address lender, address asset, uint256 amount, uint256 reserveAmount)
        external
        nonReentrant
    {
        if (advanceKey == bytes32(0)) revert ZeroKey();
        if (lender == address(0) || asset == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        if (reserveAmount > amount) revert ReserveOverAmount(reserveAmount, amount);
        reserveOf[asset] += reserveAmount;
        if (reserveAmount > 0) IERC20(asset).safeTransferFrom(msg.sender, address(this), reserveAmount);
        if (amount > reserveAmount) IERC20(asset).safeTransferFrom(msg.sender, lender, amount - reserveAmount);
        emit Repaid(advanceKey, lender, msg.sender, asset, amount, reserveAmount);
    }

    /// @notice Operator settles a job, lender first: lenders are paid from escrow then collateral, then the reserve
    /// share, then whatever remains of escrow and collateral goes back to the borrower.
    function settleJob(
        bytes32 jobKey,
        bytes32[] calldata advanceKeys,
        address[] calldata lenders,
        uint256[] calldata amounts,
        uint256 reserveAmount
    ) external onlyOperator nonReentrant {
        Job storage job = _liveJob(jobKey);
        if (advanceKeys.length != lenders.length || lenders.length != amounts.length) revert LengthMismatch();
        uint256 held = job.escrowAmount + job.collateralAmount;
        uint256 toLenders = _sumPayouts(lenders, amounts);
        if (toLenders + reserveAmount > held) revert OverHeld(toLenders + reserveAmount, held);
        uint256 toBorrower = held - toLenders - reserveAmount;
        address asset = job.asset;
        job.escrowAmount = 0;
        job.collateralAmount = 0;
        job.settled = true;
        reserveOf[asset] += reserveAmount;
        for (uint256 i; i < amounts.length; i++) {
            IERC20(asset).safeTransfer(lenders[i], amounts[i]);
            emit LenderPaid(jobKey, advanceKeys[i], lenders[i], amounts[i]);
        }
        if (toBorrower > 0) IERC20(asset).safeTransfer(job.borrower, toBorrower);
        emit JobSettled(jobKey, job.borrower, toLenders, reserveAmount, toBorrower);
    }

    function _sumPayouts(address[] calldata lenders, uint256[] calldata amounts) private pure returns (uint256 total) {
        for (uint256 i; i < amounts.length; i++) {
            if (lenders[i] == address(0)) revert ZeroAddress();
            if (amounts[i] == 0) revert ZeroAmount();
            total += amounts[i];
        }
    }

    /// @notice Operator recovers a defaulted advance for its lender: `fromRevenue` out of the job's escrow,
    /// `fromCollateral` out of the job's collateral, `fromReserve` out of the insurance reserve of `asset`.
    /// `jobKey` is zero for an advance that has no job; then only the reserve can pay.
    function liquidate(
        bytes32 advanceKey,
        bytes32 jobKey,
        address lender,
        address asset,
        uint256 fromRevenue,
        uint256 fromCollateral,
        uint256 fromReserve
    ) external onlyOperator nonReentrant {
        if (advanceKey == bytes32(0)) revert ZeroKey();
        if (lender == address(0) || asset == address(0)) revert ZeroAddress();
        uint256 total = fromRevenue + fromCollateral + fromReserve;
        if (total == 0) revert ZeroAmount();
        if (advanceLiquidated[advanceKey]) revert AdvanceAlreadyLiquidated(advanceKey);
        if (jobKey == bytes32(0)) {
            if (fromRevenue != 0 || fromCollateral != 0) revert NoJobForRevenue();
        } else {
            Job storage job = _liveJob(jobKey);
            if (asset != job.asset) revert AssetMismatch(job.asset, asset);
            if (fromRevenue > job.escrowAmount) revert OverHeld(fromRevenue, job.escrowAmount);
            if (fromCollateral > job.collateralAmount) revert OverHeld(fromCollateral, job.collateralAmount);
            job.escrowAmount -= fromRevenue;
            job.collateralAmount -= fromCollateral;
        }
        if (fromReserve > reserveOf[asset]) revert OverHeld(fromReserve, reserveOf[asset]);
        reserveOf[asset] -= fromReserve;
        advanceLiquidated[advanceKey] = true;
        IERC20(asset).safeTransfer(lender, total);
        emit Liquidated(advanceKey, jobKey, lender, asset, fromRevenue, fromCollateral, fromReserve);
    }

    /// @notice A job as the contract holds it (client zero when unknown).
    function getJob(bytes32 jobKey) external view returns (Job memory) {
        return _jobs[jobKey];
    }

    function _liveJob(bytes32 jobKey) private view returns (Job storage job) {
        job = _jobs[jobKey];
        if (job.client == address(0)) revert UnknownJob(jobKey);
        if (job.settled) revert JobAlreadySettled(jobKey);
    }
}
